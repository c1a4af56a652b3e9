#!/usr/bin/env bash
# session 3's last H200 call: new CUDA code's GPU tests, the zoo's two worst rows again, dispatch
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 75 python3 -m pytest -q -m gpu -rfEx tests/python/test_shape_families_norm.py \
  tests/python/test_pointwise_vec.py tests/python/test_chain_serving.py tests/python/test_chain_jobs.py \
  tests/python/test_reductions.py > $OUT/gpu.log 2>&1
tail -6 $OUT/gpu.log; t gpu-tests
timeout 185 python3 benchmarks/zoo/run.py --models swin_tiny,llama_prefill --budget 60 --no-compile \
  --eager-runs 1 --time-limit 170 --out $OUT/zoo > $OUT/zoo-run.log 2>&1
grep "^|" $OUT/zoo/zoo.md; t zoo
timeout 38 python3 benchmarks/dispatch_overhead.py --device cuda --rounds 1 > $OUT/dispatch.log 2>&1
tail -25 $OUT/dispatch.log; t dispatch
