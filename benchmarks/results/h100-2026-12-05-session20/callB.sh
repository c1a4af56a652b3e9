#!/usr/bin/env bash
# Session 20, call B: after chain serving reuses its state (c355c8a) and each row is ranked against
# its own device's bandwidth (GPU models had all been ranked against the host's); default options.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
LEFT=$(( 585 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models swin_tiny,convnext_tiny,vit_base,unet --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1800
