#!/usr/bin/env bash
# Session 12, call 3: the online tuner's early timeline on llama_prefill (stderr kept), then two zoo models.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
KF_BENCH_STDERR=$OUT/online-stderr.log timeout 170 python3 benchmarks/online_tuning.py \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 120 --eager-seconds 10 \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
tail -5 $OUT/online.log; grep -E "landed|hot" $OUT/online-stderr.log | cut -c1-200 | head -20; t online
W=/tmp/zw; mkdir -p $W
timeout 250 python3 benchmarks/zoo/run.py --models llama_prefill,whisper_encoder --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit 235 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep -E "^In one|median" $OUT/zoo/zoo.md; t zoo
