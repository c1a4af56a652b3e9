# Session 41, call C (calls A and B in one, the budget cut by refused starts): (1) the model check
# with narrowed hooks: PVT-v2-B0's warm-up (defaults), its check's medians beside arms.py's in one
# process with what the check left; (2) held-out models never run before, as a user runs them
# (the zoo's runner, public commands only: `kforge warmup` defaults, 60 s budget, fresh processes).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session41/callC.sh benchmarks/results/device-2026-12-07-session40/arms.py .snap/
#   run(carry=[".snap"], command="cd .snap && bash callC.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
export KFORGE_CACHE_DIR=/tmp/cc-pvt
timeout 200 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/pvt_v2_b0.py > "$OUT/pvt-warmup.log" 2>&1
grep "model check:" "$OUT/pvt-warmup.log" | cut -c1-400
echo "warmed up at $(($(date +%s) - T0)) s"
timeout 100 python3 arms.py pvt_v2_b0 vit > "$OUT/pvt-arms.log" 2>&1
grep -v "^entry" "$OUT/pvt-arms.log" | grep -v -i warn | head -4 | cut -c1-220
grep "^entry" "$OUT/pvt-arms.log" | cut -c1-200
echo "arms done at $(($(date +%s) - T0)) s"
unset KFORGE_CACHE_DIR
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models ${MODELS:-xcit_nano,fastvit_t8,edgenext_xx_small} \
  --budget 60 --no-compile --eager-runs 2 --plugin-runs 2 --time-limit $((575 - ($(date +%s) - T0))) \
  --out "$OUT/zoo" > "$OUT/zoo.log" 2>&1
grep "ok in\|failed\|skipped" "$OUT/zoo.log" | cut -c1-250
sed -n '/^| model/,/^$/p' "$OUT/zoo/zoo.md" | cut -c1-300
echo "done at $(($(date +%s) - T0)) s"
true
