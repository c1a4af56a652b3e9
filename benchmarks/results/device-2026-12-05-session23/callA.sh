#!/usr/bin/env bash
# Session 23, call A: the GPU tests owed since host/NVRTC-shared pointwise math and chain serving
# changed (C tests with CUDA, pytest -m gpu), then the zoo's slowest models with what is left.
#   run(carry=[".snap"], command="cd .snap && bash benchmarks/results/device-2026-12-05-session23/callA.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 130 bash scripts/device-ctest.sh "cuda|pool|pointwise|reduce_generic|wrapped|family|chain" > $OUT/ctest.log 2>&1
tail -6 $OUT/ctest.log; t ctest
timeout 200 python3 -m pytest -q -m gpu tests/python -rfEs -p no:cacheprovider > $OUT/gpu.log 2>&1
tail -15 $OUT/gpu.log; t gpu
LEFT=$(( 585 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models swin_tiny,efficientnet_b0 --budget 60 --no-compile --eager-runs 1 \
  --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1800
