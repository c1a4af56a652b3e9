# Session 33, call D: ResNet-50 (zoo) with deferred mode on (KFORGE_CHAIN_DEFERRED=1 in the
# warm-up and the plugin's processes: bn -> relu_ and bn -> add_ -> relu_ fused) beside
# torch.compile, then the same without the opt-in (no compile), one machine, fresh processes.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session33/callD.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callD.sh")                       # callD1/
#   run(carry=[".snap"], command="cd .snap && FIRST_S=170 DEFAULT=0 DEFERRED_ARGS=--no-compile bash callD.sh")  # callD2/
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
run_zoo() {  # $1 name, $2 models, $3 seconds, the rest: more run.py options
  local name=$1 models=$2 secs=$3
  shift 3
  rm -rf /tmp/zw-$name
  python3 benchmarks/zoo/run.py --models-dir benchmarks/zoo/models --models "$models" --budget 60 \
    --eager-runs 1 --plugin-runs 2 --ab 4 --compile-timeout 200 --time-limit "$secs" --work /tmp/zw-$name \
    --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name done at $(($(date +%s) - T0)) s"
  sed -n '/^| model/,/^$/p' "$OUT/$name/zoo.md"
  grep -h "chain" /tmp/zw-$name/logs/*-warmup.log 2>/dev/null | grep -v ETA | cut -c1-300 | tail -8
  cp /tmp/zw-$name/logs/*-warmup.log "$OUT/$name/" 2>/dev/null
}
# DEFAULT=0: the opt-in run alone; DEFERRED_ARGS: more run.py options for it (--no-compile)
run_zoo deferred ${MODELS:-resnet50} $((${FIRST_S:-300})) --env KFORGE_CHAIN_DEFERRED=1 ${DEFERRED_ARGS:-}
[ "${DEFAULT:-1}" = 1 ] && run_zoo default ${MODELS:-resnet50} $((${CALL_S:-570} - ($(date +%s) - T0) - 5)) --no-compile
