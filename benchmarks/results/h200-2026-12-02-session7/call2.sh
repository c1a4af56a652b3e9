#!/usr/bin/env bash
# Session 7, call 2: the CUDA chain jobs with packs (vec), then the zoo
# on llama_prefill and swin_tiny: packs, chain calls counted inside longer chains, covered signatures skipped.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 150 python3 -m pytest -q -m gpu -rfEx --durations=8 tests/python/test_chain_jobs.py tests/python/test_chain_guard.py \
  tests/python/test_chain_serving.py > $OUT/gpu-tests.log 2>&1
grep -E "passed|failed|FAILED|ERROR|s call" $OUT/gpu-tests.log | tail -16 | cut -c1-600
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout $(( 588 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models llama_prefill,swin_tiny --budget 60 --no-compile \
  --time-limit $(( 575 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -3 | cut -c1-1500
t zoo
grep -h -E "chain|inserted|not tuned" $W/logs/*warmup*.log 2>/dev/null | head -40 | cut -c1-300
tar czf $OUT/logs.tgz -C $W --exclude='*.pt' --exclude='cache-*' . 2>/dev/null
