#!/usr/bin/env bash
# Session 15, call 4: the confirmation's call saved as host copies and put back on the device.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 150 python3 -m pytest -q -m gpu tests/python/test_gpu.py tests/python/test_online_tuning.py \
  > $OUT/gpu-tests.log 2>&1
tail -3 $OUT/gpu-tests.log; grep -E "^FAILED|^ERROR" $OUT/gpu-tests.log | head -20
t gpu-tests
