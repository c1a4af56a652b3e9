#!/usr/bin/env bash
# Session 14, call 3: a second zoo model online (timm ViT-Base, bf16) for 240 s with the
# offline warm-up beside it (--out is written after each phase).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
summ() { python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d.get('online') or {}
print('eager', d['eager']['p50_ms'], d['eager']['p99_ms'], 'during', o.get('during_tuning'), 'final', o.get('final'), o.get('final_speedup'), o.get('end_ab'))
w=d.get('warmup') or {}; print('warmup', w.get('p50_ms'), w.get('speedup'), w.get('wall_s'), w.get('exit'))
for l in o.get('landed') or []: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])
for k,v in (o.get('by_step') or {}).items(): print(k, v)
for s in (o.get('slowest') or [])[:6]: print(s)"; }
trap 'summ; t end' EXIT
python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log --stall-dump 400 \
  --model benchmarks/zoo/models/vit_base.py --device cuda --seconds 240 --eager-seconds 20 \
  --compare-warmup --warmup-args="--time-budget 60" \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
t online
grep -c STALL $OUT/online-stderr.log
grep -E "online tuning: (landed|chain)|skipped|refused" $OUT/online-stderr.log | cut -c1-200 | head -30
