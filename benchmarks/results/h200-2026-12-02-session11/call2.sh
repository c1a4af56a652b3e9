#!/usr/bin/env bash
# Session 11, call 2: pow(x, 3) / pow(x, -2) rounded as eager does (f16 / bf16 on CUDA), then
# held-out GPT-2 through the zoo (3 fresh processes each), then plugin on/off in one process.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
export PYTHONPATH=$PWD
python3 - <<'PY' 2>&1 | tee $OUT/pow.log
import torch
for dt in (torch.bfloat16, torch.float16):
    x = torch.randn(1 << 22, device="cuda").to(dt); xf = x.float()
    for e in (3, -2):
        p = torch.pow(x, e).float()
        once = (xf ** e).to(dt).float()
        x2 = (xf * xf).to(dt).float()
        tw = (x2 * xf if e == 3 else 1 / x2).to(dt).float()
        print(f"cuda {dt} pow {e}: {(p != once).float().mean().item() * 100:.4f}% differ from once, {(p != tw).float().mean().item() * 100:.4f}% from x*x rounded first")
PY
timeout 150 python3 -m pytest -q -m gpu tests/python/test_pointwise.py -k pow -p no:cacheprovider 2>&1 | tail -3 | tee $OUT/pytest-pow.log
t pow
W=/tmp/zw; mkdir -p $W
timeout 300 python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models gpt2 --budget 60 --no-compile \
  --eager-runs 3 --plugin-runs 3 --time-limit 290 --work $W --out $OUT/zoo > $OUT/zoo.log 2>&1
grep "^|" $OUT/zoo/zoo.md; t zoo
cp $W/logs/*warmup*.log $OUT/ 2>/dev/null
grep -h -E "^chain|inserted" $W/logs/*warmup*.log 2>/dev/null | head -12 | cut -c1-220
KFORGE_CACHE_DIR=$W/cache-gpt2 timeout 90 python3 .diag/gpt2ab.py 2>&1 | tee $OUT/gpt2-ab.log | cut -c1-250
t ab
