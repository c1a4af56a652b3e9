#!/usr/bin/env bash
# Session 12, call 4: the online tuner on llama_prefill, its timeline, p50 per 10 s, end A/B.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 150 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 100 --eager-seconds 8 \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d['online']
print('eager', d['eager']['p50_ms'], 'final', o['final'], o.get('end_ab'))
print([round(x,2) for x in o['p50_by_10s']])
for l in o['landed']: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])"
t online
