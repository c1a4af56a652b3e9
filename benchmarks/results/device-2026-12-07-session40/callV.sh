# Session 40, call V: (1) the chain template's lane groups on short rows (PVT-v2's first stages)
# verify and what they take, by the GPU test of chain jobs; (2) is PVT-v2-B0 host-bound with the
# plugin (call T: 7.0 ms a forward for 2.4 ms of kernels)? Fresh processes in turn, no plugin
# and the plugin after the warm-up (hostcost.py), then arms.py in one process.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session40/{callV.sh,hostcost.py,arms.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callV.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT; nproc; uptime
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
timeout 240 python3 -m pytest -q -m gpu tests/python/test_chain_jobs.py -k "layer_norm" > "$OUT/gpu-test.log" 2>&1
tail -3 "$OUT/gpu-test.log"
echo "tested at $(($(date +%s) - T0)) s"
m=${M:-pvt_v2_b0}
hc() { timeout 60 python3 hostcost.py $m "$@" cuda 64 224 2>&1 | tail -1; }
export KFORGE_CACHE_DIR=/tmp/cv-$m
hc none
timeout 200 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/$m.py > "$OUT/$m-warmup.log" 2>&1
grep "model check:" "$OUT/$m-warmup.log" | cut -c1-300
grep "chain: add" "$OUT/$m-warmup.log" | cut -c1-160
echo "warmed up at $(($(date +%s) - T0)) s"
for r in 1 2; do hc none; hc plugin; hc disabled; done
keys=$(python3 -m kernel_forge cache ls --json | python3 -c "
import json, sys
print(' '.join(e['key'] for e in json.load(sys.stdin) if e['op'] == 'kforge::chain' and e['disabled']))")
echo "chain entries the check disabled: ${keys:-none}"
for k in $keys; do python3 -m kernel_forge cache enable $k > /dev/null; done
timeout 150 python3 arms.py $m vit > "$OUT/$m-arms.log" 2>&1
grep -v "^entry" "$OUT/$m-arms.log" | grep -v Warn | head -8 | cut -c1-220
grep "^entry" "$OUT/$m-arms.log" | cut -c1-300
echo "done at $(($(date +%s) - T0)) s"; uptime
true
