#!/usr/bin/env bash
# Session 15, call 2: transformers-style Llama prefill online for 300 s with the offline warm-up beside it,
# forwards over 40 ms dumped (what the tuner thread does then).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
summ() { python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d.get('online') or {}
print('eager', d['eager']['p50_ms'], d['eager']['p99_ms'], 'during', o.get('during_tuning'), 'final', o.get('final'), o.get('final_speedup'))
print('end_ab', json.dumps(o.get('end_ab')))
w=d.get('warmup') or {}; print('warmup', w.get('p50_ms'), w.get('speedup'), w.get('wall_s'), w.get('exit'))
print('first', o.get('first_kernel_s'), o.get('first_kernel_after_hot_s'), 'third', o.get('third_kernel_s'))
for l in o.get('landed') or []: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])
for k,v in (o.get('by_step') or {}).items(): print(k, v)
for s in (o.get('slowest') or [])[:6]: print(s)"; }
trap 'summ; t end' EXIT
timeout 515 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log --stall-dump 40 \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 300 --eager-seconds 20 \
  --compare-warmup --warmup-args="--time-budget 45" \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
t online
grep -c STALL $OUT/online-stderr.log
grep -E "online tuning: (landed|chain)|skipped|refused" $OUT/online-stderr.log | cut -c1-200 | head -30
grep -A3 "^STALL" $OUT/online-stderr.log | grep -v "^--" | grep -E "STALL|File" | cut -c1-160 | head -60
