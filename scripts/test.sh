#!/usr/bin/env bash
# All tests: C unit tests (ctest), the same under ASan+UBSan, then the Python tests (pytest).
# GPU tests are marked and skipped without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
jobs=$(nproc 2>/dev/null || echo 2)

echo "== C unit tests"
cmake -S . -B build/ctest -G Ninja -DKF_BUILD_TORCH_EXT=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/ctest -j "$jobs"
ctest --test-dir build/ctest --output-on-failure -j "$jobs"

echo "== C unit tests under ASan + UBSan"
cmake -S . -B build/asan -G Ninja -DKF_BUILD_TORCH_EXT=OFF -DKF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== Python tests"
set +e
$PY -m pytest -q -rs tests/python "$@"
rc=$?
set -e
# pytest exits 5 when it collected nothing (e.g. a GPU-only selection on a CPU machine)
if [ $rc -eq 5 ]; then rc=0; fi
exit $rc
