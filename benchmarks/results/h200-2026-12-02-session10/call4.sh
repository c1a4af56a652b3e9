#!/usr/bin/env bash
# Session 10, call 4: held-out GPT-2 and Qwen2 (as time allows) through the zoo commands.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
W=/tmp/zw; mkdir -p $W
timeout $(( 290 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models gpt2,qwen2_prefill --budget 60 --no-compile \
  --eager-runs 2 --plugin-runs 2 --time-limit $(( 282 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -2 | cut -c1-1800
t zoo
cp $W/logs/*warmup*.log $OUT/ 2>/dev/null
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -30 | cut -c1-220
