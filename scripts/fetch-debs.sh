#!/usr/bin/env bash
# Download the Debian packages that scripts/device-build.sh unpacks on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
apt-get download libcjson1 libcjson-dev libxxhash-dev
ls -l
