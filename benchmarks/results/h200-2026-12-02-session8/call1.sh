#!/usr/bin/env bash
# Session 8, call 1: the zoo on swin_tiny (warp-per-row chain layout) and llama_prefill
# (one-run warm-up; SwiGLU flagged unfusable), three processes per variant.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
W=/tmp/zw; mkdir -p $W
timeout $(( 588 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models swin_tiny,llama_prefill --budget 60 --no-compile \
  --time-limit $(( 575 - ($(date +%s) - T0) )) --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep "^- " $OUT/zoo/zoo.md | tail -3 | cut -c1-1500
t zoo
grep -h -E "chain|inserted|not tuned|captured|unfusable|new to" $W/logs/*warmup*.log 2>/dev/null | head -40 | cut -c1-300
tar czf $OUT/logs.tgz -C $W --exclude='*.pt' --exclude='cache-*' . 2>/dev/null
