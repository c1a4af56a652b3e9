#!/usr/bin/env bash
# Session 11, call 3: how CUDA eager reads a Python number in bf16/f16 mul, div, add; the GPU
# tests of the pow / scalar / tanh-GELU fixes; held-out GPT-2 through the zoo; on/off A/B.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 .diag/scalars.py 2>&1 | grep cuda | tee $OUT/scalars.log
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 200 python3 -m pytest -v -m gpu tests/python/test_pointwise.py tests/python/test_chain_jobs.py -k "pow or scalar or gelu" -p no:cacheprovider 2>&1 | grep -E "PASS|FAIL|Error|assert|passed|failed" | cut -c1-400 | tee $OUT/pytest.log
t pytest
W=/tmp/zw; mkdir -p $W
timeout 300 python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models gpt2 --budget 60 --no-compile \
  --eager-runs 3 --plugin-runs 3 --time-limit 290 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; t zoo
cp $W/logs/*warmup*.log $OUT/ 2>/dev/null
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -12 | cut -c1-300
KFORGE_CACHE_DIR=$W/cache-gpt2 timeout 90 python3 .diag/gpt2ab.py 2>&1 | tee $OUT/gpt2-ab.log | cut -c1-250
t ab
