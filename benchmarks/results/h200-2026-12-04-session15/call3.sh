#!/usr/bin/env bash
# Session 15, call 3: the GPU tests of this session's changes (a Python number per device,
# the duty cycle without NVRTC compiles, case files through a pinned stage on a side stream,
# the worker dying with its parent), then Llama prefill online for 150 s: the forwards during
# job preparation with the pinned copies, and the end A/B with nothing started after shutdown.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 200 python3 -m pytest -q -m gpu tests/python/test_pointwise.py tests/python/test_online_tuning.py \
  tests/python/test_gpu.py tests/python/test_chain_serving.py tests/python/test_wrapped_scalars.py \
  > $OUT/gpu-tests.log 2>&1
tail -3 $OUT/gpu-tests.log; grep -E "^FAILED|^ERROR" $OUT/gpu-tests.log | head -20
t gpu-tests
summ() { python3 -c "
import json;d=json.load(open('$OUT/online.json'));o=d.get('online') or {}
print('eager', d['eager']['p50_ms'], d['eager']['p99_ms'], 'during', o.get('during_tuning'), 'final', o.get('final'), o.get('final_speedup'))
print('end_ab', json.dumps(o.get('end_ab')))
print('first', o.get('first_kernel_s'), o.get('first_kernel_after_hot_s'), 'third', o.get('third_kernel_s'))
for l in o.get('landed') or []: print(round(l['t'],1), round(l['after_hot_s'],1), l['confirmed_ratio'], l['signature'][:80])
for k,v in (o.get('by_step') or {}).items(): print(k, v)
for s in (o.get('slowest') or [])[:6]: print(s)"; }
trap 'summ; t end' EXIT
timeout $((560 - $(date +%s) + T0)) python3 benchmarks/online_tuning.py --stderr $OUT/online-stderr.log \
  --stall-dump 40 --model benchmarks/zoo/models/llama_prefill.py --device cuda --seconds 150 \
  --eager-seconds 15 --env KFORGE_LOG=info --out $OUT/online.json > $OUT/online.log 2>&1
t online
grep -c "^STALL" $OUT/online-stderr.log
