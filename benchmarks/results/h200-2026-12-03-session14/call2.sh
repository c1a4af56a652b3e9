#!/usr/bin/env bash
# Session 14, call 2: with captures of chain-served calls (the add -> RMSNorm chain), again
# online llama_prefill for 300 s with stack dumps of stalled forwards and the offline warm-up beside it.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
true

timeout 480 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log --stall-dump 400 \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 300 --eager-seconds 20 \
  --compare-warmup --warmup-args="--time-budget 60" \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
tail -2 $OUT/online.log; t online
python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d['online']
print('eager', d['eager']['p50_ms'], d['eager']['p99_ms'], 'during', o['during_tuning'], 'final', o['final'], o['final_speedup'], o.get('end_ab'))
w=d.get('warmup') or {}; print('warmup', w.get('p50_ms'), w.get('speedup'), w.get('wall_s'), w.get('exit'))
for l in o['landed']: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])
for k,v in o['by_step'].items(): print(k, v)
for s in o['slowest'][:6]: print(s)"
grep -c STALL $OUT/online-stderr.log; grep -E "STALL|matched eager|a kernel is attached" $OUT/online-stderr.log | cut -c1-150 | head -20
grep -E "online tuning: (landed )?chain|skipped|refused" $OUT/online-stderr.log | cut -c1-200 | head -20
