# Session 41, call E: why call C's model check timed PVT-v2-B0 at 13-18 ms a forward when arms.py
# timed it at 3.8-5.1 ms right after. After a warm-up without the check (20 s budget): alt.py (the
# arms in blocks, then switched at every forward as the check switches them, then blocks again),
# then the check's own run (the warm-up's child step, narrowed hooks) on the same cache; the
# busiest processes every 5 s (monitor.log).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session41/{callE.sh,alt.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callE.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
# what else runs: the busiest processes and the GPU's, every 5 s
( while true; do echo "== $(($(date +%s) - T0)) s"; ps -eo pid,pcpu,etimes,args --sort=-pcpu | head -6 | cut -c1-160
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; sleep 5; done ) > "$OUT/monitor.log" 2>&1 &
MON=$!
export KFORGE_CACHE_DIR=/tmp/ce-pvt
timeout 150 python3 -m kernel_forge warmup --time-budget 20 --no-check benchmarks/heldout/pvt_v2_b0.py > "$OUT/pvt-warmup.log" 2>&1
grep "ZOO" "$OUT/pvt-warmup.log" | python3 -c "import json,sys; [print('warm-up run median', json.loads(l.split('ZOO ',1)[1])['median_ms'], 'ms') for l in sys.stdin]"
echo "warmed up at $(($(date +%s) - T0)) s"
timeout 100 python3 alt.py pvt_v2_b0 vit 2>&1 | grep -v -i warn | tee "$OUT/alt.log"
echo "alt done at $(($(date +%s) - T0)) s"
cd benchmarks/heldout && timeout 100 python3 -m kernel_forge._warmup check "$OUT/check.json" pvt_v2_b0.py > "$OUT/check.log" 2>&1; cd ../..
python3 - "$OUT/check.json" <<'PY'
import json, sys
from kernel_forge import _modelcheck as mc
r = json.load(open(sys.argv[1]))
v = mc.verdict(r["rows"], r["arms"])
print("check run:", v["rounds"], "rounds, medians", {a: round(x, 3) for a, x in v["ms"].items()}, "keep", v["keep"])
for c in v["compared"]: print("  ", c)
PY
kill $MON
echo "done at $(($(date +%s) - T0)) s"
true
