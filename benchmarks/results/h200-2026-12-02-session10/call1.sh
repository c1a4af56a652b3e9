#!/usr/bin/env bash
# Session 10, call 1: the whole GPU test suite, then the held-out Mistral prefill (eager attention,
# the causal-mask softmax chain under inference_mode) through the zoo's commands.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 230 python3 -m pytest -q -m gpu -rfEx --durations=8 tests/python > $OUT/gpu-tests.log 2>&1
grep -E "passed|failed|FAILED|ERROR" $OUT/gpu-tests.log | tail -12 | cut -c1-700
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout $(( 580 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models mistral_prefill --budget 60 --no-compile \
  --eager-runs 2 --plugin-runs 2 --time-limit $(( 570 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -3 | cut -c1-1500
t zoo
cp $W/logs/*warmup*.log $OUT/ 2>/dev/null
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -30 | cut -c1-200
