#!/usr/bin/env bash
# Session 8, call 2: the CUDA chain jobs with the row tail in registers, the zoo on swin_tiny,
# then online tuning on llama_prefill (p99 while tuning after the cheaper tuner look).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 80 python3 -m pytest -q -m gpu -rfEx --durations=4 tests/python/test_chain_jobs.py > $OUT/gpu-tests.log 2>&1
grep -E "passed|failed|FAILED|ERROR" $OUT/gpu-tests.log | tail -8 | cut -c1-600
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout 200 python3 benchmarks/zoo/run.py --models swin_tiny --budget 60 --no-compile \
  --time-limit 190 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -1 | cut -c1-1500
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -20 | cut -c1-200
tar czf $OUT/logs.tgz -C $W --exclude='*.pt' --exclude='cache-*' . 2>/dev/null
t zoo
SKIP_BUILD=1 LIMIT=$(( 585 - ($(date +%s) - T0) )) MODELS=llama_prefill bash benchmarks/online_h200.sh 2>&1 | tail -30
t online
