# Session 40, call T: do the chains cost NF-ResNet-26 and PVT-v2-B0, as session 38's model check
# said (call O2), and where? Per model: the warm-up (defaults); the chain entries the check
# disabled enabled again; then arms.py in one process (every kernel / chain kernels off /
# nothing served: wall and kernel time per forward, the kernels that differ).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session40/{callT.sh,arms.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callT.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
for mf in ${MODELS:-nf_resnet26:cnn pvt_v2_b0:vit}; do
  m=${mf%%:*} fam=${mf##*:}
  export KFORGE_CACHE_DIR=/tmp/ct-$m
  timeout 200 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/$m.py > "$OUT/$m-warmup.log" 2>&1
  grep "model check:" "$OUT/$m-warmup.log" | cut -c1-300
  echo "$m warmed up at $(($(date +%s) - T0)) s"
  keys=$(python3 -m kernel_forge cache ls --json | python3 -c "
import json, sys
print(' '.join(e['key'] for e in json.load(sys.stdin) if e['op'] == 'kforge::chain' and e['disabled']))")
  echo "$m: chain entries the check disabled: ${keys:-none}"
  for k in $keys; do python3 -m kernel_forge cache enable $k > /dev/null; done
  timeout 150 python3 arms.py $m $fam 2>&1 | tee "$OUT/$m-arms.log" | grep -v "^entry" | cut -c1-220
  grep "^entry" "$OUT/$m-arms.log" | cut -c1-400
  echo "$m done at $(($(date +%s) - T0)) s"
done
true
