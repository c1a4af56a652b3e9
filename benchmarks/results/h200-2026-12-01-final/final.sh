#!/usr/bin/env bash
# The session's last H200 call, from .snap; what comes back is under $OUT (8 files at most).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
tail -1 /tmp/build.log; t built
timeout 80 python3 -m pytest -q tests/python/test_hidden_writes.py \
  "tests/python/test_cache.py::test_planted_wrong_entry_is_caught_on_first_use" > $OUT/crash-fix.log 2>&1
tail -2 $OUT/crash-fix.log; t crash-fix
timeout 250 python3 benchmarks/zoo/run.py --models vit_base,bert_base,convnext_tiny --budget 60 \
  --no-compile --time-limit 240 --out $OUT/zoo > /tmp/zoo-run.log 2>&1
tail -5 /tmp/zoo-run.log; cat $OUT/zoo/zoo.md; t zoo
timeout 110 bash scripts/device-ctest.sh "templates_cuda|pointwise|reduce_generic|wrapped|family|chains" > $OUT/ctest.log 2>&1
tail -6 $OUT/ctest.log; t ctest
timeout 80 python3 -m pytest -q -m gpu tests/python/test_wrapped_scalars.py tests/python/test_pointwise.py \
  tests/python/test_reductions.py -rs > $OUT/gpu.log 2>&1
tail -4 $OUT/gpu.log; t gpu
timeout 40 python3 benchmarks/dispatch_overhead.py --device cuda > $OUT/overhead.log 2>&1
tail -12 $OUT/overhead.log; t overhead
