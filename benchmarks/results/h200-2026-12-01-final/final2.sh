#!/usr/bin/env bash
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
timeout 60 python3 -m pytest -q -m gpu tests/python/test_wrapped_scalars.py -rs > $OUT/gpu2.log 2>&1
tail -2 $OUT/gpu2.log; t scalars
timeout 240 python3 benchmarks/zoo/run.py --models bert_base,convnext_tiny --budget 60 \
  --no-compile --time-limit 230 --out $OUT/zoo > /tmp/zoo-run.log 2>&1
tail -4 /tmp/zoo-run.log; grep "^|" $OUT/zoo/zoo.md; t zoo
