#!/usr/bin/env bash
# Session 24, call A: the `where` tune that ended "too fast to trust" on the H100, then held-out
# classifiers on the H200 (never run there), with chain serving holding user tensors weakly.
#   run(carry=[".snap"], command="cd .snap && bash benchmarks/results/device-2026-12-05-session24/callA.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 60 python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider \
  "tests/python/test_pointwise.py::test_tune_finds_and_serves_an_engine_kernel_cuda" > $OUT/where.log 2>&1
tail -4 $OUT/where.log; t where
timeout 100 python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider tests/python/test_chain_serving.py \
  tests/python/test_chain_inference.py > $OUT/chain.log 2>&1
tail -4 $OUT/chain.log; t chain
LEFT=$(( 585 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models deit_small,regnety_008,mobilenet_v2,densenet121 \
  --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw \
  --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1500
