#!/usr/bin/env bash
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
W=/tmp/zw4; mkdir -p $W
timeout 265 python3 benchmarks/zoo/run.py --models llama_prefill --budget 60 --no-compile --eager-runs 4 --plugin-runs 4 \
  --time-limit 255 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -2 | cut -c1-1500
t zoo
