#!/usr/bin/env bash
# The forge on the lent H200 in one call (logs and tables under $OUT):
#   run(command="bash benchmarks/device_forge.sh", carry=[".debs"], timeout_s=560)
# 1. per-op search on every baseline shape (benchmarks/forge_gpu.py), 2. kforge warmup on
# ResNet-50, then eager vs plugin side by side in one process. Each step has its own time limit so
# a slow step cannot eat the others; FORGE_BUDGET / SHAPE_BUDGET / ITERS / WARMUP_* tune them, and
# STEPS="forge" or STEPS="resnet" runs one part, ONLY=0,1,2 some of the forge's shapes (several
# calls fit the 10-minute limit better):
#   run(command="STEPS=forge FORGE_BUDGET=500 SHAPE_BUDGET=35 bash benchmarks/device_forge.sh", ...)
#   run(command="STEPS=resnet WARMUP_BUDGET=400 WARMUP_TUNE_S=300 bash benchmarks/device_forge.sh", ...)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kf-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/kf-cache}
step() { echo; echo "######## $(date +%T) $*"; }
{
  step "build: bash scripts/device-build.sh"
  bash scripts/device-build.sh || exit 1
} > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }

STEPS=${STEPS:-forge resnet}
[[ " $STEPS " == *" forge "* ]] && {
  step "python benchmarks/forge_gpu.py --iterations ${ITERS:-50} --time-budget ${SHAPE_BUDGET:-12} --random-inputs 1"
  timeout "${FORGE_BUDGET:-300}" python3 benchmarks/forge_gpu.py --iterations "${ITERS:-50}" \
    --time-budget "${SHAPE_BUDGET:-12}" --random-inputs 1 --only "${ONLY:-}" --out "$OUT"
} 2>&1 | tee "$OUT/forge_gpu.log" | grep -E "^\[|####|Error|error"

[[ " $STEPS " == *" resnet "* ]] && {
  step "kforge warmup on ResNet-50 (batch 64, fp16, channels_last)"
  timeout "${WARMUP_BUDGET:-130}" kforge warmup --iterations "${WARMUP_ITERS:-30}" --max-jobs "${WARMUP_JOBS:-5}" \
    --min-share 0.03 --time-budget "${WARMUP_TUNE_S:-60}" --json "$OUT/warmup-resnet50.json" \
    benchmarks/resnet50.py --iters 5
  step "ResNet-50: eager vs plugin with the warm cache, one process, alternating rounds"
  timeout 60 python3 benchmarks/resnet50.py --compare --rounds 3 --iters 10
  step "kforge cache ls"
  kforge cache ls
} 2>&1 | tee "$OUT/resnet50-warmup.log" | grep -vE "^\s*$" | tail -40

# the trees and results of every job (sources stay on the device: the trees name them)
python3 - "$OUT" <<'PY'
import glob, os, shutil, sys
out = os.path.join(sys.argv[1], "jobs")
for d in glob.glob(os.path.join(os.environ["KFORGE_CACHE_DIR"], "jobs", "*")):
    dst = os.path.join(out, os.path.basename(d))
    os.makedirs(dst, exist_ok=True)
    for f in ("tree.json", "result.json"):  # the device tool brings back a limited number of files
        if os.path.exists(os.path.join(d, f)):
            shutil.copy(os.path.join(d, f), dst)
PY
echo "done $(date +%T)"
