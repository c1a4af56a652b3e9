#!/usr/bin/env bash
# Session 13, call 3: what the model's thread and the tuner's do while a forward stalls when a
# chain lands (online llama_prefill, --stall-dump 400), then held-out models in the zoo.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 150 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log --stall-dump 400 \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 55 --eager-seconds 5 \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
tail -2 $OUT/online.log
grep -n "STALL" $OUT/online-stderr.log | head; grep -A60 -m2 "STALL" $OUT/online-stderr.log | grep -v "threading.py" | head -90
t online
W=/tmp/zw; mkdir -p $W
timeout 300 python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models gpt2,qwen2_prefill --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit 285 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep -E "^In one|median" $OUT/zoo/zoo.md; tail -3 $OUT/zoo.log; t zoo
