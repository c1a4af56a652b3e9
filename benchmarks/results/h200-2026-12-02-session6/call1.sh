#!/usr/bin/env bash
# Session 6, call 1: the GPU tests owed (chains incl. the layer-norm tail, online), then the zoo with chains.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 170 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_jobs.py tests/python/test_chain_guard.py \
  tests/python/test_chain_serving.py tests/python/test_chain_inference.py tests/python/test_online_ramp.py \
  tests/python/test_online_tuning.py tests/python/test_online_gaps.py > $OUT/gpu-tests.log 2>&1
grep -E "passed|failed|FAILED|ERROR" $OUT/gpu-tests.log | tail -12 | cut -c1-400
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models bert_base,vit_base --budget 60 --no-compile \
  --time-limit $(( 570 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -3 | cut -c1-1500
t zoo
tar czf $OUT/logs.tgz -C $W --exclude='*.pt' --exclude='cache-*' . 2>/dev/null
