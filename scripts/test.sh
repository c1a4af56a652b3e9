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

if command -v clang >/dev/null 2>&1; then
  echo "== libFuzzer: the LLM answer, API body and launch-record parsers (${KF_FUZZ_SECONDS:-20} s)"
  CC=clang cmake -S . -B build/fuzz -G Ninja -DKF_BUILD_TORCH_EXT=OFF -DKF_BUILD_TESTS=OFF \
    -DKF_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build/fuzz --target fuzz_llm_parse
  work=$(mktemp -d)  # the fuzzer adds what it finds to its corpus folder: not the repository's
  cp tests/fuzz/llm_answer/* "$work"/
  ./build/fuzz/fuzz_llm_parse -max_total_time="${KF_FUZZ_SECONDS:-20}" -max_len=65536 \
    -print_final_stats=1 "$work" 2>&1 | tail -4
  rm -rf "$work"
else
  echo "== libFuzzer: skipped (no clang; scripts/setup.sh --test installs it)"
fi

echo "== Python tests"
set +e
$PY -m pytest -q -rs tests/python "$@"
rc=$?
set -e
# pytest exits 5 when it collected nothing (e.g. a GPU-only selection on a CPU machine)
if [ $rc -eq 5 ]; then rc=0; fi
exit $rc
