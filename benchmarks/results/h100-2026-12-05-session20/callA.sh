#!/usr/bin/env bash
# Session 20, call A: the models the GPU-bandwidth ranking fix (898126c), channels_last chains
# (49954a6) and batch-norm blocks (7ad3f2f) should move; default warm-up options.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
LEFT=$(( 585 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models efficientnet_b0,swin_tiny,convnext_tiny,mobilenet_v3 --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1800
