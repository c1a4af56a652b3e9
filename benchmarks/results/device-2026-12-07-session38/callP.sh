# Session 38, call P (for the next session): do the chains cost NF-ResNet-26 and PVT-v2-B0 what
# the warm-up's model check said in call O2 (it turned them off: every kernel 5.85 ms against
# nothing served 5.24 ms on NF-ResNet, whose chain kernel alone is 1.23x its members)? Per model:
# the warm-up (defaults), then two plugin processes with the in-process A/B (--ab 6) as the
# warm-up left the cache, then the chain entries enabled again (`kforge cache enable`) and two more.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session38/callP.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callP.sh")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
ab() {  # $1 model, $2 label
  for i in 1 2; do
    python3 benchmarks/heldout/$1.py --plugin --ab 6 2>&1 | grep "^ZOO" | python3 -c "
import json, sys
d = json.loads(sys.stdin.read()[4:]); a = d['ab']
print('$1 $2: median %.3f ms, enabled %.3f disabled %.3f ms, %.3fx' % (d['median_ms'], a['enabled_ms'], a['disabled_ms'], a['speedup']))"
  done
}
for m in ${MODELS:-nf_resnet26 pvt_v2_b0}; do
  export KFORGE_CACHE_DIR=/tmp/cp-$m
  python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/$m.py > "$OUT/$m-warmup.log" 2>&1
  grep "model check:" "$OUT/$m-warmup.log" | cut -c1-300
  echo "$m warmed up at $(($(date +%s) - T0)) s"
  python3 benchmarks/heldout/$m.py > "$OUT/$m-eager.log" 2>&1; grep -o "[0-9.]* ms per forward" "$OUT/$m-eager.log"
  ab $m "as left"
  keys=$(python3 -m kernel_forge cache ls --json | python3 -c "
import json, sys
print(' '.join(e['key'] for e in json.load(sys.stdin) if e['op'] == 'kforge::chain' and e['disabled']))")
  echo "$m: chain entries the check disabled: ${keys:-none}"
  [ -n "$keys" ] || continue
  for k in $keys; do python3 -m kernel_forge cache enable $k > /dev/null; done
  ab $m "chains enabled again"
  echo "$m done at $(($(date +%s) - T0)) s"
done
true
