#!/usr/bin/env bash
# Session 10, call 2: the GPU tests call 1 left (verbose: each result as it ends), the softmax
# epilogue chain and the device-argument cast on CUDA, then the held-out Mistral prefill again.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 150 python3 -m pytest -v -m gpu -rfEx tests/python/test_chain_jobs.py tests/python/test_pointwise.py \
  tests/python/test_shape_families_norm.py tests/python/test_tune_cat.py tests/python/test_wrapped_scalars.py \
  tests/python/test_tuner_memory.py -k "not gpu_measurements" > $OUT/gpu-tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/gpu-tests.log | cut -c1-160 | tail -40
grep -E "^E  " $OUT/gpu-tests.log | head -20 | cut -c1-1500
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models mistral_prefill --budget 60 --no-compile \
  --eager-runs 2 --plugin-runs 2 --time-limit $(( 575 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -2 | cut -c1-1800
t zoo
cp $W/logs/*warmup*.log $OUT/ 2>/dev/null
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -30 | cut -c1-220
