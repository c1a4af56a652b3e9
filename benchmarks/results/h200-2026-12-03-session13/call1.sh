#!/usr/bin/env bash
# Session 13, call 1: GPU tests after the gpu_timer fix, then the online tuner on llama_prefill with its end A/B.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 200 python3 -m pytest -q -m gpu -rfEx tests/python/test_gpu.py tests/python/test_guard.py \
  tests/python/test_online_tuning.py tests/python/test_online_gaps.py tests/python/test_online_ramp.py > $OUT/gpu-tests.log 2>&1
tail -8 $OUT/gpu-tests.log; t gpu-tests
timeout 160 python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log \
  --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 100 --eager-seconds 8 \
  --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
tail -3 $OUT/online.log
python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d['online']
print('eager', d['eager']['p50_ms'], 'final', o['final'], o.get('end_ab'))
print([round(x,2) for x in o['p50_by_10s']])
for l in o['landed']: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])"
t online
