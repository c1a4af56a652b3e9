#!/usr/bin/env bash
# Session 13, call 4: the chain GPU tests after the faster match, then online llama_prefill
# again with --stall-dump 400: does the chain landing still stall the model?
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 100 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_serving.py tests/python/test_chain_guard.py > $OUT/gpu-chain-tests.log 2>&1
tail -3 $OUT/gpu-chain-tests.log; t chain-tests
timeout 130 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log --stall-dump 400 \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 55 --eager-seconds 5 \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
tail -2 $OUT/online.log
python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d['online']
print('eager', d['eager']['p50_ms'], d['eager']['p99_ms'], 'during', o['during_tuning'], 'final', o['final'], o.get('end_ab'))
for l in o['landed']: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])
for s in o['slowest'][:5]: print(s)"
grep -c STALL $OUT/online-stderr.log; grep -E "STALL|matched eager|a kernel is attached" $OUT/online-stderr.log | cut -c1-150
t online
