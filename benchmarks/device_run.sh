#!/usr/bin/env bash
# Everything this project checks on the lent H200, in one call (logs under $OUT):
#   run(command="bash benchmarks/device_run.sh", carry=[".debs"])
# then copy the logs into benchmarks/results/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kf-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
step() { echo; echo "######## $*"; }
{
  step "build: bash scripts/device-build.sh"
  bash scripts/device-build.sh || exit 1
  step "kforge doctor"
  kforge doctor
} 2>&1 | tee "$OUT/build-doctor.log"

{
  step "GPU tests: python -m pytest -q -rs -m gpu tests/python"
  python3 -m pytest -q -rs -m gpu tests/python
  step "CUDA bit-identity: KFORGE_TEST_DEVICE=cuda python -m pytest -q tests/python/test_bit_identical.py"
  KFORGE_TEST_DEVICE=cuda python3 -m pytest -q -rs tests/python/test_bit_identical.py
  step "all CPU tests with torch $(python3 -c 'import torch; print(torch.__version__)'): python -m pytest -q -m 'not gpu' tests/python"
  python3 -m pytest -q -rs -m "not gpu" -x tests/python
} 2>&1 | tee "$OUT/gpu-tests.log"

{
  step "kforge run benchmarks/resnet50.py --iters 20"
  kforge run --top 25 --json "$OUT/resnet50-stats.json" benchmarks/resnet50.py --iters 20
  for i in 1 2 3; do
    step "round $i: python benchmarks/resnet50.py --iters 50 (no plugin), then --plugin (loaded, no kernels)"
    python3 benchmarks/resnet50.py --iters 50
    python3 benchmarks/resnet50.py --iters 50 --plugin
  done
} 2>&1 | tee "$OUT/resnet50-run.log"

{
  step "python benchmarks/dispatch_overhead.py --rounds 5"
  python3 benchmarks/dispatch_overhead.py --rounds 5
} 2>&1 | tee "$OUT/dispatch-overhead.log"
