#!/usr/bin/env bash
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 175 python3 -m pytest -v -s -m gpu -rfEx tests/python/test_online_tuning.py > $OUT/gpu-online-tests.log 2>&1
grep -E "GPU:|PASS|FAIL|passed|failed|^E " $OUT/gpu-online-tests.log | tail -12 | cut -c1-600
t gpu-tests
W=/tmp/zw3; mkdir -p $W
timeout $(( ${LIM:-520} - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models swin_tiny --budget 60 --no-compile \
  --time-limit $(( ${LIM:-520} - 10 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -2 | cut -c1-1500
t zoo
