#!/usr/bin/env bash
# Session 8, call 3: GPU tests of the _to_copy cast (per op and inside the bf16 RMSNorm chain),
# then the zoo on llama_prefill (the whole RMSNorm as one chain), swin_tiny (chain outcome
# prediction) and bert_base.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 70 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_jobs.py tests/python/test_pointwise.py -k "rmsnorm or to_copy or window" > $OUT/gpu-tests.log 2>&1
grep -E "passed|failed|FAILED|ERROR" $OUT/gpu-tests.log | tail -8 | cut -c1-600
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout $(( 575 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models llama_prefill,swin_tiny,bert_base --budget 60 --no-compile \
  --time-limit $(( 565 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -3 | cut -c1-1500
t zoo
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -30 | cut -c1-200
