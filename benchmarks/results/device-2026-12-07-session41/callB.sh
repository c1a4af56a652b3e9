# Session 41, call B: held-out models never run before, as a user runs them (the zoo's runner,
# public commands only: `kforge warmup` with its defaults and a 60 s budget, then fresh processes).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session41/callB.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callB.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models ${MODELS:-xcit_nano,fastvit_t8,edgenext_xx_small} \
  --budget 60 --no-compile --eager-runs 2 --plugin-runs 2 --time-limit $((570 - ($(date +%s) - T0))) \
  --out "$OUT/zoo" > "$OUT/zoo.log" 2>&1
grep "ok in\|failed\|skipped" "$OUT/zoo.log" | cut -c1-250
sed -n '/^| model/,/^$/p' "$OUT/zoo/zoo.md" | cut -c1-300
echo "done at $(($(date +%s) - T0)) s"
true
