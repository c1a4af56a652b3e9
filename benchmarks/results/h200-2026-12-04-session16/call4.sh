#!/usr/bin/env bash
# Session 16, call 4: the held-out GPT-2 (its tanh GELU now records as one chain from 0.5 * h)
# and the zoo's Llama decode loop (rotary on one token per step), default warm-up options.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models gpt2 --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit 175 --work /tmp/zh --out $OUT/heldout > /tmp/heldout.log 2>&1
t heldout; sed -n '/^| model/,/^$/p' $OUT/heldout/zoo.md; grep -E "^- " $OUT/heldout/zoo.md | cut -c1-1800
LEFT=$(( 405 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models llama_decode --budget 60 --no-compile --eager-runs 1 \
  --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw --out $OUT/zoo > /tmp/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1800
