#!/bin/bash
# Session 33's sweep: ../new-user-cpu-2026-12-04-b/run.sh on the four families, with the warm-up's
# defaults (logs/default/) and again with KFORGE_CHAIN_DEFERRED=1 in every step (logs/deferred/),
# then ab.py in one process on each warm cache (ab-table.txt).
#   bash benchmarks/results/new-user-cpu-2026-12-06-session33/sweep.sh
HERE=$(cd "$(dirname "$0")" && pwd); cd "$HERE"
MODELS="resnet regnet mobilenet_v2 efficientnet"
for mode in default deferred; do
  [ $mode = deferred ] && export KFORGE_CHAIN_DEFERRED=1
  NU=/tmp/nu33-$mode DIR=$HERE BUDGET=60 bash ../new-user-cpu-2026-12-04-b/run.sh $MODELS > run-$mode.log 2>&1
  rm -rf logs/$mode && mkdir -p logs/$mode && mv logs/*.log logs/$mode/
  for m in $MODELS; do
    echo "== $mode $m" >> ab-table.txt
    (cd /tmp/nu33-$mode && KFORGE_CACHE_DIR=/tmp/nu33-$mode/cache-$m PYTHONPATH=$HERE/../../.. OMP_NUM_THREADS=1 \
      python3 $HERE/../new-user-cpu-2026-12-04-b/ab.py $m) >> ab-table.txt 2>&1
  done
done
