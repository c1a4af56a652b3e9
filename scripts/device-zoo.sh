#!/usr/bin/env bash
# One device call of the model zoo: build the snapshot (scripts/device-build.sh), then
# benchmarks/zoo/run.py on MODELS with the warm-up's default options (--budget 60), fresh
# processes and in-process on/off blocks, within the call's 600 s. Logs and tables under $OUT.
#   bash scripts/device-snapshot.sh
#   run(carry=[".snap"], command="cd .snap && bash scripts/device-zoo.sh swin_tiny,vit_base")
# MODELS_DIR=benchmarks/heldout runs the held-out scripts instead of the zoo's; CALL_S (default
# 585) is the seconds the whole call may take, for a session's last device time.
set -uo pipefail
cd "$(dirname "$0")/.."
MODELS=${1:?usage: scripts/device-zoo.sh MODEL[,MODEL...]}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
t() { echo "== $(($(date +%s) - T0)) s: $*"; }
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
t built
rm -rf /tmp/zw  # an earlier call's work on a warm machine: its tables went back in its $OUT
LEFT=$((${CALL_S:-585} - ($(date +%s) - T0)))
python3 benchmarks/zoo/run.py --models-dir "${MODELS_DIR:-benchmarks/zoo/models}" --models "$MODELS" --budget 60 --no-compile --eager-runs 1 \
  --plugin-runs 2 --ab 4 --time-limit $((LEFT - 5)) --work /tmp/zw --out "$OUT/zoo" > "$OUT/zoo.log" 2>&1
t zoo
sed -n '/^| model/,/^$/p' "$OUT/zoo/zoo.md"
grep -E "^- " "$OUT/zoo/zoo.md" | cut -c1-1800
grep -h "priority is time x headroom" /tmp/zw/logs/*-warmup.log 2>/dev/null | cut -c1-400
grep -H "model check" /tmp/zw/logs/*-warmup.log 2>/dev/null | sed 's|^/tmp/zw/logs/||' | cut -c1-600
