# Session 41, call D: online tuning (KFORGE_TUNE=1, its defaults, the in-process model check
# included) on held-out NF-ResNet-26, as benchmarks/online_tuning.py runs a user's loop.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session41/callD.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callD.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
timeout 300 python3 benchmarks/online_tuning.py --model benchmarks/heldout/nf_resnet26.py --device cuda \
  --seconds ${SECS:-130} --eager-seconds 15 --env KFORGE_LOG=info --out "$OUT/online-nfr.json" --stderr "$OUT/online-nfr.stderr" > "$OUT/online-nfr.log" 2>&1
python3 - "$OUT/online-nfr.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("eager", {k: v for k, v in d.get("eager", {}).items() if not isinstance(v, (list, dict))})
o = d.get("online", {})
print("online", {k: v for k, v in o.items() if not isinstance(v, (list, dict)) and k != "stderr_tail"})
print("end_ab", o.get("end_ab") or o.get("ab"))
PY
grep -i "model check\|check:" "$OUT/online-nfr.stderr" | cut -c1-300 | head -5
echo "done at $(($(date +%s) - T0)) s"
true
