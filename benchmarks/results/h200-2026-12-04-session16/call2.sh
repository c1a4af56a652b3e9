#!/usr/bin/env bash
# Session 16, call 2: the rotary chain on the H200 at HEAD: the chain GPU tests, then the zoo's
# Llama prefill and ViT (attention chains now predict inference-tensor externals) and the
# held-out Mistral prefill, default warm-up options, --ab.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 120 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_serving.py tests/python/test_chain_inference.py \
  tests/python/test_chain_jobs.py tests/python/test_chain_guard.py > $OUT/gpu-tests.log 2>&1
tail -4 $OUT/gpu-tests.log; t gpu-tests
LEFT=$(( 575 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models mistral_prefill --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT * 38 / 100 )) --work /tmp/zh --out $OUT/heldout > /tmp/heldout.log 2>&1
t heldout; sed -n '/^| model/,/^$/p' $OUT/heldout/zoo.md; grep -E "^- " $OUT/heldout/zoo.md | cut -c1-1500
LEFT=$(( 575 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models llama_prefill,vit_base --budget 60 --no-compile --eager-runs 1 \
  --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw --out $OUT/zoo > /tmp/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1500
