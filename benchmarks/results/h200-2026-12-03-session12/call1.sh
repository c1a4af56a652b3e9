#!/usr/bin/env bash
# Session 12, call 1: CNN zoo models with the in-process A/B (plugin enabled/disabled in turn).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
export PYTHONPATH=$PWD
W=/tmp/zw; mkdir -p $W
timeout $((TL+15)) python3 benchmarks/zoo/run.py --models ${MODELS} --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $TL --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep -E "^In one|median" $OUT/zoo/zoo.md; t zoo
