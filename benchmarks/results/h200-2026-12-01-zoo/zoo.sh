#!/usr/bin/env bash
# usage: bash .diag/zoo.sh MODELS TIME_LIMIT [extra run.py args]
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
models=$1; limit=$2; shift 2
timeout $((limit + 20)) python3 benchmarks/zoo/run.py --models $models --budget 60 \
  --time-limit $limit --out $OUT/zoo "$@" > $OUT/zoo-run.log 2>&1
tail -5 $OUT/zoo-run.log; grep "^|" $OUT/zoo/zoo.md; t zoo
