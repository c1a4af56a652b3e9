# Session 35, call G (session 34's, never ran there): the tile walk with its staged input and dynamic shared memory (a layer norm after a strided residual add, cuda_chain.c) on the
# GPU: its test, then Whisper's encoder (zoo) beside torch.compile, then the held-out MLP-Mixer
# (no compile: device time), fresh processes, defaults.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callG.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callG.sh")
#   run(carry=[".snap"], command="cd .snap && TEST=0 HELD=0 bash callG.sh")   # callG1/: what device time allowed
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=${T0:-$(date +%s)}
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
[ "${SKIP_BUILD:-0}" = 1 ] || bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
if [ "${TEST:-1}" = 1 ]; then  # TEST=0: device time
  timeout 200 python3 -m pytest -q -m gpu tests/python/test_chain_transposed_norm.py > "$OUT/gpu-test.log" 2>&1
  tail -5 "$OUT/gpu-test.log"
  echo "tested at $(($(date +%s) - T0)) s"
fi
run_zoo() {  # $1 name, $2 models dir, $3 models, $4 seconds, the rest: more run.py options
  local name=$1 dir=$2 models=$3 secs=$4
  shift 4
  [ -n "$models" ] || return 0
  rm -rf /tmp/zw-$name
  python3 benchmarks/zoo/run.py --models-dir "$dir" --models "$models" --budget 60 \
    --eager-runs 2 --plugin-runs 2 --ab 4 --compile-timeout 200 --time-limit "$secs" --work /tmp/zw-$name \
    --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name done at $(($(date +%s) - T0)) s"
  sed -n '/^| model/,/^$/p' "$OUT/$name/zoo.md"
  grep -h "chain" /tmp/zw-$name/logs/*-warmup.log 2>/dev/null | grep -v ETA | cut -c1-240 | tail -8
  rm -f "$OUT/$name/zoo-logs.tgz"
}
run_zoo zoo benchmarks/zoo/models "${MODELS:-whisper_encoder}" ${FIRST_S:-235} ${ZOO_ARGS:-}
# timm's MLP-Mixer keeps its residual stream transposed from its patch embedding, as Whisper does
[ "${HELD:-1}" = 1 ] && run_zoo held benchmarks/heldout "${MODELS_HELD:-mixer_b16}" $((${CALL_S:-475} - ($(date +%s) - T0) - 5)) --no-compile
