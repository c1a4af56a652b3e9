# Session 26, call E: the CUDA group-norm chain after the fix of its f16 rounding: its GPU test,
# each candidate's knobs and status (and the first wrong one's reason).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 200 python3 -m pytest -q -m gpu tests/python/test_chain_group_norm.py -k cuda --basetemp=/tmp/gnt > $OUT/gn-test.log 2>&1
t gn test; tail -3 $OUT/gn-test.log | cut -c1-3000
python3 - <<'PY' | tee $OUT/gn-nodes.txt | head -40
import glob, json, collections
for f in sorted(glob.glob("/tmp/gnt/**/w.json", recursive=True)):
    for r in json.load(open(f))["rows"]:
        if r["op"] == "kforge::chain": print(r["signature"], r["status"], r.get("eager_us"), r.get("best_us"), (r.get("detail") or "")[:300])
for f in sorted(glob.glob("/tmp/gnt/**/tree.json", recursive=True)):
    ns = json.load(open(f)).get("nodes", [])
    c = collections.Counter((n.get("status"), (n.get("meta") or {}).get("knobs", {}).get("rows")) for n in ns)
    print(f.split("/jobs/")[-1][:50], dict(c))
PY
