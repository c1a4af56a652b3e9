#!/usr/bin/env bash
# Session 13, call 2: the online tuner on llama_prefill after the capture-wait fix (per-second
# timeline, end A/B with the tuner stopped), then the zoo's whisper_encoder and llama_decode.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 170 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 100 --eager-seconds 8 \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
tail -2 $OUT/online.log
python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d['online']
print('eager', d['eager']['p50_ms'], d['eager']['p99_ms'], 'during', o['during_tuning'], 'final', o['final'], o.get('end_ab'))
print([round(x,2) for x in o['p50_by_10s']])
for l in o['landed']: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])
print(' '.join(f'{s}:{p}:{ph}' for s,n,p,ph in o['by_second']))"
grep -E "not called|was not" $OUT/online-stderr.log | cut -c1-160
t online
W=/tmp/zw; mkdir -p $W
timeout 300 python3 benchmarks/zoo/run.py --models whisper_encoder,llama_decode --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit 285 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; grep -E "^In one|median" $OUT/zoo/zoo.md; tail -3 $OUT/zoo.log; t zoo
