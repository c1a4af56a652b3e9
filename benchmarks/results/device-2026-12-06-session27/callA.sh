# Session 27, call A: the CUDA group-norm chains after the f16 fix (f358a5b) and the norm's
# epilogue (group norm -> silu, the norm heading a chain): both GPU tests, then each chain row and
# its candidates' statuses by knob.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session27/callA.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callA.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
for f in test_chain_group_norm test_chain_norm_epilogue; do
  timeout 240 python3 -m pytest -q -m gpu tests/python/$f.py -k cuda --basetemp=/tmp/$f > $OUT/$f.log 2>&1
  t $f; tail -3 $OUT/$f.log | cut -c1-3000
done
python3 - <<'PY' | tee $OUT/chain-rows.txt | head -60
import glob, json, collections
for f in sorted(glob.glob("/tmp/test_chain_*/**/w.json", recursive=True)):
    print(f.split("/")[2])
    for r in json.load(open(f))["rows"]:
        if r["op"] == "kforge::chain":
            print(" ", r["signature"], r["status"], r.get("eager_us"), r.get("best_us"), (r.get("detail") or "")[:240])
for f in sorted(glob.glob("/tmp/test_chain_*/**/tree.json", recursive=True)):
    ns = json.load(open(f)).get("nodes", [])
    c = collections.Counter((n.get("status"), (n.get("meta") or {}).get("knobs", {}).get("rows")) for n in ns)
    print(f.split("/jobs/")[-1][:60], dict(c))
PY
