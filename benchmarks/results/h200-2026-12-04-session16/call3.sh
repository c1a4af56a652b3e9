#!/usr/bin/env bash
# Session 16, call 3: deferred mode on the H200 (Llama prefill with KFORGE_CHAIN_DEFERRED=1: its
# SwiGLU as a chain kernel at the mul), the held-out Mistral prefill again with the defaults
# (call 2's ran on a host issuing forwards 1.6x slower than call 1's), the chain GPU tests.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 100 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_serving.py tests/python/test_chain_inference.py \
  tests/python/test_chain_jobs.py tests/python/test_chain_guard.py > $OUT/gpu-tests.log 2>&1
tail -3 $OUT/gpu-tests.log; t gpu-tests
LEFT=$(( 575 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models llama_prefill --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 --ab 4 \
  --env KFORGE_CHAIN_DEFERRED=1 --time-limit $(( LEFT * 48 / 100 )) --work /tmp/zd --out $OUT/deferred > /tmp/deferred.log 2>&1
t deferred; sed -n '/^| model/,/^$/p' $OUT/deferred/zoo.md; grep -E "^- " $OUT/deferred/zoo.md | cut -c1-1800
LEFT=$(( 575 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models mistral_prefill --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zh --out $OUT/heldout > /tmp/heldout.log 2>&1
t heldout; sed -n '/^| model/,/^$/p' $OUT/heldout/zoo.md; grep -E "^- " $OUT/heldout/zoo.md | cut -c1-1800
