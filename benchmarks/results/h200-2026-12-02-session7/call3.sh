#!/usr/bin/env bash
# Session 7, call 3: the CUDA chain jobs with the warp-per-row layout (a Swin window's rows of 49),
# then online tuning on llama_prefill (issue 21: first kernel, p50/p99 while tuning, final vs warmup).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 60 python3 -m pytest -q -m gpu -rfEx --durations=3 tests/python/test_chain_jobs.py > $OUT/gpu-tests.log 2>&1
grep -E "passed|failed|FAILED|ERROR" $OUT/gpu-tests.log | tail -8 | cut -c1-600
t gpu-tests
SKIP_BUILD=1 LIMIT=$(( 500 - ($(date +%s) - T0) )) MODELS=llama_prefill bash benchmarks/online_h200.sh 2>&1 | tail -30
t online
