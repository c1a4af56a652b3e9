# Session 25, call A: where DeiT-Small's plugin host time goes on the GPU. Builds cfe967f (old:
# served outputs through the dispatcher) and HEAD (new: allocated directly), the new one's GPU
# allocator test and CUDA chain tests, one warm-up, then fresh processes alternating: eager, the
# plugin (new, old), imported with KFORGE_DISABLE=1, speed-guard samples off, under no_grad.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
(cd old && bash scripts/device-build.sh > $OUT/build-old.log 2>&1) || { tail -30 $OUT/build-old.log; exit 1; }
rm -rf /tmp/kf_old && mkdir /tmp/kf_old && cp -r old/kernel_forge /tmp/kf_old/ && t built old
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built new
timeout 60 python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider tests/python/test_gpu.py -k "allocator or served or graph" > $OUT/tests.log 2>&1
timeout 90 python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider tests/python/test_chain_serving.py tests/python/test_chain_inference.py >> $OUT/tests.log 2>&1
grep -E "passed|failed|FAILED|Error" $OUT/tests.log | tail -8; t tests
M=benchmarks/heldout/deit_small.py C=/tmp/cache-deit
KFORGE_CACHE_DIR=$C timeout 150 python3 -m kernel_forge warmup --time-budget 40 $M > $OUT/warmup.log 2>&1; t warmup
tail -12 $OUT/warmup.log
run() {  # tag, then env and args
  local tag=$1; shift
  env KFORGE_CACHE_DIR=$C "$@" 2>&1 | grep "^ZOO " | sed "s/^ZOO /$tag /" >> $OUT/runs.txt
}
for r in 1 2; do
  run eager timeout 60 python3 $M
  run new timeout 60 python3 $M --plugin --ab 8
  run old env PYTHONPATH=/tmp/kf_old:$PWD timeout 60 python3 $M --plugin --ab 8
  run imported-disabled env KFORGE_DISABLE=1 timeout 60 python3 $M --plugin
  t round $r
done
run new-nosample env KFORGE_SAMPLE_EVERY=1000000000 timeout 60 python3 $M --plugin --ab 8
run eager-nograd timeout 60 python3 $M --grad-mode no_grad
run new-nograd timeout 60 python3 $M --plugin --ab 8 --grad-mode no_grad
t variants
python3 - $OUT/runs.txt <<'PY'
import json, sys
for line in open(sys.argv[1]):
    tag, js = line.split(" ", 1); r = json.loads(js); ab = r.get("ab") or {}
    print(f"{tag:18s} ms {r['median_ms']:.3f} host {r['host_median_ms']:.3f}", end="")
    if ab: print(f" | ab on {ab['enabled_ms']:.3f} off {ab['disabled_ms']:.3f} x{ab['speedup']:.3f} host on {ab['enabled_host_ms']:.3f} off {ab['disabled_host_ms']:.3f}", end="")
    print()
PY
