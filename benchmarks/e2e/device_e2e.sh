#!/usr/bin/env bash
# End-to-end runs on the lent H200 in one call (benchmarks/e2e/README.md): build once, then
# benchmarks/e2e/run.py for each model of MODELS, each under `timeout`, with an equal share of the
# time left (run.py --time-limit shrinks its phases to fit). Logs and results under $OUT/e2e/:
# e2e.log, e2e-MODEL.md per model, and e2e-results.tgz (the JSONs, the build log, every job's
# tree.json/result.json); the device tool brings back at most 8 files.
#   run(command="bash benchmarks/e2e/device_e2e.sh", carry=[".debs"], timeout_s=600)
#   run(command="MODELS='gemma4-prefill gemma4-decode qwen3_5-prefill qwen3_5-decode' bash benchmarks/e2e/device_e2e.sh", carry=[".debs"], timeout_s=600)
# MODELS (default "resnet50 vae"), BUDGET_S (seconds for the whole call, build included; 540),
# E2E_ARGS (more run.py options, e.g. "--warmup-budget 200 --no-cold-start"); LANES and
# LANE0_FIRST below (several GPUs: the nvidia-h200-x2 kind).
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
OUT=${OUT:-/tmp/kf-out}
DIR="$OUT/e2e"
WORK=/tmp/kf-e2e
rm -rf "$WORK"
mkdir -p "$DIR" "$WORK"
export PYTHONUNBUFFERED=1
MODELS=${MODELS:-resnet50 vae}
BUDGET_S=${BUDGET_S:-540}
LOG="$DIR/e2e.log"

pack() {  # few files back: the results, and each job's tree and result, in one archive
  (cd "$WORK" && { ls e2e-* build.log 2>/dev/null
     find . -path '*/jobs/*' \( -name tree.json -o -name result.json -o -name job.json \); } |
     tar czf "$DIR/e2e-results.tgz" -T -)
}

{
  echo "######## $(date +%T) build: bash scripts/device-build.sh"
  bash scripts/device-build.sh
} > "$WORK/build.log" 2>&1
rc=$?
cat "$WORK/build.log" >> "$LOG"
if [ $rc -ne 0 ]; then tail -40 "$WORK/build.log"; pack; exit 1; fi

# One lane per GPU: LANES="a,b c" runs a then b on GPU 0 and c on GPU 1, side by side (each
# model alone on its GPU); without LANES, MODELS in one lane on GPU 0. LANE0_FIRST: a command run
# in lane 0 before its models (e.g. the GPU C tests), its output in $DIR/lane0-first.log.
lane() {  # lane INDEX MODEL...
  local i=$1 n m left share rc
  shift
  local log="$WORK/e2e-lane$i.log"
  export CUDA_VISIBLE_DEVICES=$i
  if [ "$i" = 0 ] && [ -n "${LANE0_FIRST:-}" ]; then
    echo "######## $(date +%T) lane 0 first: $LANE0_FIRST" | tee -a "$log"
    bash -c "$LANE0_FIRST" > "$DIR/lane0-first.log" 2>&1
    rc=$?  # before any $(...) below resets it
    echo "######## $(date +%T) lane 0 first: exit $rc" | tee -a "$log"
    tail -5 "$DIR/lane0-first.log"
  fi
  n=$#
  for m in "$@"; do
    left=$(( BUDGET_S - ($(date +%s) - T0) ))
    share=$(( left / n ))
    n=$(( n - 1 ))
    if [ "$share" -lt 60 ]; then
      echo "######## $(date +%T) $m skipped: ${share} s left for it" | tee -a "$log"
      continue
    fi
    echo "######## $(date +%T) GPU $i $m: python3 benchmarks/e2e/run.py $m --time-limit $share ${E2E_ARGS:-}" | tee -a "$log"
    # the progress bars rewrite one line with \r: keep each bar's last state
    timeout -k 10 $(( share + 20 )) python3 benchmarks/e2e/run.py "$m" --device cuda --out "$WORK" \
      --cache-dir "$WORK/cache-$m" --time-limit "$share" ${E2E_ARGS:-} 2>&1 |
      sed -u 's/.*\r//' >> "$log"
    rc=${PIPESTATUS[0]}
    echo "######## $(date +%T) GPU $i $m: exit $rc" | tee -a "$log"
    grep -h "eager .* ms, plugin .* ms" "$log" | tail -1
    [ -f "$WORK/e2e-$m.md" ] && cp "$WORK/e2e-$m.md" "$DIR/"
  done
}

LANES=${LANES:-$(echo $MODELS | tr ' ' ',')}
i=0
for l in $LANES; do
  lane "$i" $(echo "$l" | tr ',' ' ') &
  i=$(( i + 1 ))
done
wait
cat "$WORK"/e2e-lane*.log >> "$LOG"
pack
echo "done $(date +%T), $(( $(date +%s) - T0 )) s"
