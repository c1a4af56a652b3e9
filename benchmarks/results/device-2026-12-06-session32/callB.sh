# Session 32, call B: torch.compile columns (default options) beside eager for the zoo's and the
# held-out models where the plugin did best (benchmarks/zoo/run.py --compile-only: eager and
# torch.compile processes, no warm-up, no plugin).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session32/callB.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callB.sh")
set -u
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
python3 benchmarks/zoo/run.py --compile-only --models ${ZOO:-whisper_encoder,llama_prefill,efficientnet_b0,bert_base} \
  --time-limit ${ZOO_S:-290} --out "$OUT/zoo-compile" > "$OUT/zoo-compile.log" 2>&1
tail -25 "$OUT/zoo-compile.log"
python3 benchmarks/zoo/run.py --compile-only --models-dir benchmarks/heldout \
  --models ${HELD:-mixer_b16,qwen2_prefill,mobilenet_v2} --time-limit ${HELD_S:-200} \
  --out "$OUT/heldout-compile" > "$OUT/heldout-compile.log" 2>&1
tail -25 "$OUT/heldout-compile.log"
