#!/usr/bin/env bash
# Session 10, call 3: the chain GPU tests (the bf16 RMSNorm tolerance), then the zoo: llama_prefill (its RMSNorm chains now of 9), vit_base, whisper_encoder.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
timeout 75 python3 -m pytest -v -m gpu -rfEx tests/python/test_chain_jobs.py -k "wide or rmsnorm or cast" > $OUT/gpu-tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/gpu-tests.log | cut -c1-160 | tail -40
grep -E "^E  " $OUT/gpu-tests.log | head -20 | cut -c1-1500
t gpu-tests
W=/tmp/zw; mkdir -p $W
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models llama_prefill,vit_base,whisper_encoder --budget 60 --no-compile \
  --eager-runs 2 --plugin-runs 2 --time-limit $(( 575 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -2 | cut -c1-1800
t zoo
cp $W/logs/*warmup*.log $OUT/ 2>/dev/null
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -30 | cut -c1-220
