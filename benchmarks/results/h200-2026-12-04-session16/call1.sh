#!/usr/bin/env bash
# Session 16, call 1: the zoo at HEAD for the models never or long not measured: the diffusion
# UNet (never on the H200), the held-out Mistral prefill (last session 10), Llama prefill (last
# session 12), with the warm-up's default options and --ab.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
LEFT=$(( 575 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models unet,llama_prefill --budget 60 --no-compile --eager-runs 1 \
  --plugin-runs 2 --ab 4 --time-limit $(( LEFT * 58 / 100 )) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; tail -4 $OUT/zoo/zoo.md
LEFT=$(( 575 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models mistral_prefill --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zh --out $OUT/heldout > $OUT/heldout.log 2>&1
t heldout; tail -4 $OUT/heldout/zoo.md
