# Session 40, call U: is PVT-v2-B0 host-bound with the plugin loaded (call T: 7.0 ms a forward
# for 2.4 ms of kernels, in every arm)? Fresh processes in turn: no plugin; the plugin with an
# empty cache intercepting every op (KFORGE_INTERCEPT=all); after the warm-up, the plugin as
# it left the cache, enabled and disabled (hostcost.py), then arms.py with the chains enabled.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session40/{callU.sh,hostcost.py,arms.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callU.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT; nproc; uptime
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
m=${M:-pvt_v2_b0}
hc() { timeout 60 python3 hostcost.py $m "$@" cuda 64 224 2>&1 | tail -1; }
export KFORGE_CACHE_DIR=/tmp/cu-empty
for r in 1 2; do hc none; KFORGE_INTERCEPT=all hc plugin; KFORGE_INTERCEPT=all hc disabled; done
export KFORGE_CACHE_DIR=/tmp/cu-$m
timeout 200 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/$m.py > "$OUT/$m-warmup.log" 2>&1
grep "model check:" "$OUT/$m-warmup.log" | cut -c1-300
echo "warmed up at $(($(date +%s) - T0)) s"
for r in 1 2; do hc none; hc plugin; hc disabled; done
keys=$(python3 -m kernel_forge cache ls --json | python3 -c "
import json, sys
print(' '.join(e['key'] for e in json.load(sys.stdin) if e['op'] == 'kforge::chain' and e['disabled']))")
for k in $keys; do python3 -m kernel_forge cache enable $k > /dev/null; done
for r in 1 2; do hc none; hc plugin; done
timeout 150 python3 arms.py $m vit 2>&1 | tee "$OUT/$m-arms.log" | grep -v "^entry" | head -3 | cut -c1-220
cp -r /tmp/cu-$m "$OUT/cache" 2>/dev/null; rm -rf "$OUT/cache/jobs"
echo "done at $(($(date +%s) - T0)) s"; uptime
true
