#!/usr/bin/env bash
# Session 6, call 2: the two online GPU tests cut by call 1's timeout, then the zoo on llama_prefill and whisper_encoder.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 200 python3 -m pytest -v -m gpu -rfEx --durations=5 tests/python/test_online_tuning.py tests/python/test_online_gaps.py > $OUT/gpu-online-tests.log 2>&1
grep -E "PASS|FAIL|ERROR|passed|failed|s call" $OUT/gpu-online-tests.log | tail -12 | cut -c1-400
t gpu-tests
W=/tmp/zw2; mkdir -p $W
timeout $(( 588 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models llama_prefill,whisper_encoder --budget 60 --no-compile \
  --time-limit $(( 575 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -3 | cut -c1-1500
t zoo
