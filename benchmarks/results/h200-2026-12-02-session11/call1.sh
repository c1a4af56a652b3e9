#!/usr/bin/env bash
# Session 11, call 1: why GPT-2 (held out) is slower with the plugin: host ms per forward for
# eager, the plugin on an empty cache, KFORGE_DISABLE=1, and on a warm cache with knobs; CPU
# profiles of eager and plugin. Then how CUDA rounds bf16 pow(x, 3).
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
t built
export PYTHONPATH=$PWD
L=$OUT/gpt2-diag.log
python3 .diag/gpt2prof.py 2>&1 | tee -a $L; t eager
KFORGE_CACHE_DIR=/tmp/kf-empty python3 .diag/gpt2prof.py --plugin 2>&1 | grep -v "^stat" | tee -a $L; t empty
KFORGE_DISABLE=1 TAG=disabled python3 .diag/gpt2prof.py --plugin 2>&1 | tee -a $L; t disabled
export KFORGE_CACHE_DIR=/tmp/kfc
timeout 120 python3 -m kernel_forge warmup --time-budget 40 --json $OUT/warmup.json benchmarks/heldout/gpt2.py > $OUT/warmup.log 2>&1
t warmup; grep -E "inserted|^chain" $OUT/warmup.log | head -20 | cut -c1-200
TAG=warm python3 .diag/gpt2prof.py --plugin --stats --profile > $OUT/warm-profile.log 2>&1; head -1 $OUT/warm-profile.log | tee -a $L; grep "^stat\|^chain" $OUT/warm-profile.log | cut -c1-250; t warm
TAG=typed0 KFORGE_TYPED=0 python3 .diag/gpt2prof.py --plugin 2>&1 | tee -a $L; t typed0
TAG=nosample KFORGE_SAMPLE_EVERY=1048576 KFORGE_EAGER_SAMPLE_EVERY=0 python3 .diag/gpt2prof.py --plugin 2>&1 | tee -a $L; t nosample
TAG=intercept_all KFORGE_INTERCEPT=all python3 .diag/gpt2prof.py --plugin 2>&1 | tee -a $L; t intercept_all
unset KFORGE_CACHE_DIR
python3 .diag/gpt2prof.py --profile > $OUT/eager-profile.log 2>&1; head -1 $OUT/eager-profile.log | tee -a $L; t eager-profile
python3 - <<'PY' 2>&1 | tee $OUT/pow.log
import torch
x = torch.randn(1 << 22, device="cuda").bfloat16()
p = torch.pow(x, 3)
for name, ref in [("(x*x)*x bf16", (x * x) * x), ("x*(x*x) bf16", x * (x * x)),
                  ("f32 x*x*x once", (x.float() * x.float() * x.float()).bfloat16()),
                  ("f32 powf", torch.pow(x.float(), 3).bfloat16())]:
    print(f"pow(x,3) vs {name}: {(p != ref).float().mean().item() * 100:.4f}% differ")
PY
t pow
