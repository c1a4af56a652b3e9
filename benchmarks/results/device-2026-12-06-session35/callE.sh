# Session 35, call E (session 34's, never ran there): ResNet-50 (zoo) with deferred mode on (KFORGE_CHAIN_DEFERRED=1 in every
# step: bn -> relu_ and bn -> add_ -> relu_ fused) beside torch.compile, then held-out CNNs
# (benchmarks/heldout) with the same opt-in, no compile, one machine, fresh processes.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callE.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callE.sh")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
run_zoo() {  # $1 name, $2 models dir, $3 models, $4 seconds, the rest: more run.py options
  local name=$1 dir=$2 models=$3 secs=$4
  shift 4
  [ -n "$models" ] || return 0
  rm -rf /tmp/zw-$name
  python3 benchmarks/zoo/run.py --models-dir "$dir" --models "$models" --budget 60 \
    --eager-runs 2 --plugin-runs 2 --ab 4 --compile-timeout 200 --time-limit "$secs" --work /tmp/zw-$name \
    --out "$OUT/$name" --env KFORGE_CHAIN_DEFERRED=1 "$@" > "$OUT/$name.log" 2>&1
  echo "== $name done at $(($(date +%s) - T0)) s"
  sed -n '/^| model/,/^$/p' "$OUT/$name/zoo.md"
  # the chain rows of each warm-up's table: status and speed-up per chain
  grep -h "chain" /tmp/zw-$name/logs/*-warmup.log 2>/dev/null | grep -v ETA | cut -c1-240 | tail -12
  rm -f "$OUT/$name/zoo-logs.tgz"
}
run_zoo resnet benchmarks/zoo/models "${MODELS:-resnet50}" "${FIRST_S:-330}" ${FIRST_ARGS:-}
run_zoo held benchmarks/heldout "${MODELS_HELD:-mobilenet_v2}" $((${CALL_S:-570} - ($(date +%s) - T0) - 5)) --no-compile
