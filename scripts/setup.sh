#!/usr/bin/env bash
# Set up a fresh Debian machine: system packages, torch, and kernel_forge installed in editable
# mode (the built plugin lands in kernel_forge/). `--test` also installs the test dependencies.
# Safe to run again: every step is skipped or quick when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
pkgs="cmake ninja-build gcc g++ libcjson-dev libxxhash-dev libcurl4-openssl-dev"
if ! dpkg -s $pkgs >/dev/null 2>&1; then
  echo "== apt-get install $pkgs"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
fi
PY=${PYTHON:-python3}
if ! $PY -c "import torch" 2>/dev/null; then
  echo "== pip install torch==2.13.0"
  $PY -m pip install -q torch==2.13.0
fi
if [ "${1:-}" = "--test" ]; then
  echo "== pip install test dependencies"
  # redis: the client of the fleet cache (kernel_forge/_remote.py)
  $PY -m pip install -q pytest transformers redis
  # the UI's browser tests: headless chromium driven by selenium (Debian's browser, no downloads);
  # clang for the libFuzzer targets; redis-server for the fleet cache tests (each starts its own)
  if ! dpkg -s chromium chromium-driver clang redis-server >/dev/null 2>&1; then
    echo "== apt-get install chromium chromium-driver clang redis-server"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver clang \
      redis-server >/dev/null
  fi
  $PY -m pip install -q selenium
fi
echo "== building and installing kernel_forge (pip install -e .)"
$PY -m pip install -q --no-build-isolation -e . 2>&1 | grep -v "Running pip as the 'root' user" || true
$PY -c "import kernel_forge as kf; print('== kernel_forge', kf.__version__, 'loaded,', len(kf.intercepted_ops()), 'ops intercepted')"
