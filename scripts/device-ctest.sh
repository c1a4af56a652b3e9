#!/usr/bin/env bash
# The C tests on the lent GPU machine, where the CUDA template tests also run every compiled
# kernel against a double reference. Needs scripts/device-build.sh first (it unpacks the carried
# cJSON / xxHash packages under /tmp/kfdeps); NVRTC and the CUDA headers are torch's wheels'.
#   run(command="bash scripts/device-build.sh && bash scripts/device-ctest.sh [REGEX]", carry=[".debs"])
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(python3 -c 'import os, kernel_forge._native as n; n._locate_cuda_toolkit(); \
print("export KFORGE_NVRTC=%s KFORGE_CUDA_INCLUDE=%s" % (os.environ.get("KFORGE_NVRTC", ""), \
os.environ.get("KFORGE_CUDA_INCLUDE", "")))')"
export CMAKE_PREFIX_PATH=/tmp/kfdeps/usr LD_LIBRARY_PATH=/tmp/kfdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build/device-ctest -G Ninja -DKF_BUILD_TORCH_EXT=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/device-ctest -j "$(nproc)" >/dev/null
rc=0
ctest --test-dir build/device-ctest --output-on-failure -j 4 ${1:+-R "$1"} || rc=$?
# every test's own output (kernels compiled and run on the GPU, checks), passed ones too
[ -n "${OUT:-}" ] && cp build/device-ctest/Testing/Temporary/LastTest.log "$OUT/ctest-LastTest.log"
exit $rc
