#!/usr/bin/env bash
bash .diag/eff.sh
export PYTHONUNBUFFERED=1
timeout 270 python3 benchmarks/zoo/run.py --models llama_prefill,swin_tiny --budget 60 \
  --no-compile --time-limit 245 --out $OUT/zoo > $OUT/zoo-run.log 2>&1
tail -3 $OUT/zoo-run.log; grep "^|" $OUT/zoo/zoo.md
