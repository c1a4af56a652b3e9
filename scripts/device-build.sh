#!/usr/bin/env bash
# Build and install kernel_forge on the lent GPU machine, which has torch, cmake and a compiler
# but no package registry and no cJSON / xxHash headers. Those travel as Debian packages in
# .debs/ (fetched here with scripts/fetch-debs.sh) and are unpacked under /tmp/kfdeps.
#
#   run(command="bash scripts/device-build.sh && ...", carry=[".debs"])
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=/tmp/kfdeps
mkdir -p "$DEPS"
for f in .debs/*.deb; do dpkg -x "$f" "$DEPS"; done
export CMAKE_PREFIX_PATH="$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
echo "== device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo no GPU)"
python3 -c "import torch; print('== torch', torch.__version__, 'cuda', torch.version.cuda)"
python3 -m pip install --no-build-isolation --no-deps --no-index -q -e . 2>&1 | grep -v "Running pip as the 'root' user" || true
python3 -c "import kernel_forge as kf; print('== kernel_forge', kf.__version__, len(kf.intercepted_ops()), 'ops intercepted')"
