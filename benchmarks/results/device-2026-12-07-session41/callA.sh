# Session 41, call A: (1) the model check with narrowed hooks on a host that call W lacked:
# PVT-v2-B0's warm-up (defaults), its check's medians beside arms.py's in one process with what
# the check left; (2) online tuning (KFORGE_TUNE=1, defaults) on held-out NF-ResNet-26.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session41/callA.sh benchmarks/results/device-2026-12-07-session40/arms.py .snap/
#   run(carry=[".snap"], command="cd .snap && bash callA.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
export KFORGE_CACHE_DIR=/tmp/ca-pvt
timeout 200 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/pvt_v2_b0.py > "$OUT/pvt-warmup.log" 2>&1
grep "model check:" "$OUT/pvt-warmup.log" | cut -c1-400
echo "warmed up at $(($(date +%s) - T0)) s"
for i in 1 2; do
  timeout 100 python3 arms.py pvt_v2_b0 vit > "$OUT/pvt-arms$i.log" 2>&1
  grep -v "^entry" "$OUT/pvt-arms$i.log" | grep -v -i warn | head -4 | cut -c1-220
done
grep "^entry" "$OUT/pvt-arms1.log" | cut -c1-200
echo "arms done at $(($(date +%s) - T0)) s"
unset KFORGE_CACHE_DIR
left=$((560 - ($(date +%s) - T0)))
secs=$(( left - 70 < 150 ? left - 70 : 150 ))
echo "online for $secs s"
timeout $((left - 5)) python3 benchmarks/online_tuning.py --model benchmarks/heldout/nf_resnet26.py --device cuda \
  --seconds $secs --eager-seconds 15 --out "$OUT/online-nfr.json" --stderr "$OUT/online-nfr.stderr" > "$OUT/online-nfr.log" 2>&1
python3 - "$OUT/online-nfr.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("eager", {k: v for k, v in d.get("eager", {}).items() if not isinstance(v, (list, dict))})
o = d.get("online", {})
print("online", {k: v for k, v in o.items() if not isinstance(v, (list, dict)) and k != "stderr_tail"})
print("end_ab", o.get("end_ab") or o.get("ab"))
PY
echo "done at $(($(date +%s) - T0)) s"
true
