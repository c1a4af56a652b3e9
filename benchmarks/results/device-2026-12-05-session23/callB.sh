#!/usr/bin/env bash
# Session 23, call B (the rest of the session's device time, on the warm machine): GPU tests of
# the pointwise engine and chain serving, then two held-out classifiers never run on a GPU.
#   run(carry=[".snap"], command="cd .snap && bash benchmarks/results/device-2026-12-05-session23/callB.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 130 python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider tests/python/test_pointwise.py \
  tests/python/test_chain_serving.py tests/python/test_chain_inference.py > $OUT/gpu.log 2>&1
tail -6 $OUT/gpu.log; t gpu
LEFT=$(( 455 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models regnety_008,deit_small --budget 60 \
  --no-compile --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw2 \
  --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1500
