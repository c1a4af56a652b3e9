# Session 33: eager, the plugin (warm-up defaults, --budget 60) and torch.compile (default options)
# side by side, fresh processes, for models where the plugin did best: one zoo run per models
# folder (MODELS_ZOO from benchmarks/zoo/models, MODELS_HELD from benchmarks/heldout).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session33/callC.sh .snap/
#   run(carry=[".snap"], command="cd .snap && MODELS_ZOO=whisper_encoder MODELS_HELD=mixer_b16 bash callC.sh")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
run_zoo() {  # $1 name, $2 models dir, $3 models, $4 seconds
  [ -n "$3" ] || return 0
  rm -rf /tmp/zw-$1
  python3 benchmarks/zoo/run.py --models-dir "$2" --models "$3" --budget 60 --eager-runs 1 --plugin-runs 2 \
    --ab 4 --compile-timeout 200 --time-limit "$4" --work /tmp/zw-$1 --out "$OUT/$1" > "$OUT/$1.log" 2>&1
  echo "== $1 done at $(($(date +%s) - T0)) s"
  sed -n '/^| model/,/^$/p' "$OUT/$1/zoo.md"
}
LEFT=$((${CALL_S:-575} - ($(date +%s) - T0)))
if [ -n "${MODELS_HELD:-}" ] && [ -n "${MODELS_ZOO:-}" ]; then FIRST=$((LEFT / 2)); else FIRST=$((LEFT - 5)); fi
run_zoo zoo benchmarks/zoo/models "${MODELS_ZOO:-}" "$FIRST"
run_zoo held benchmarks/heldout "${MODELS_HELD:-}" $((${CALL_S:-575} - ($(date +%s) - T0) - 5))
