# Session 27, call B: call A's two GPU tests after the CUDA group norm's y became eager's from
# the stored mean and rstd (call C, right after on the same machine: the zoo's UNet).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session27/call[BC].sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callB-not-run.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
for f in test_chain_group_norm test_chain_norm_epilogue; do
  timeout 200 python3 -m pytest -q -m gpu tests/python/$f.py -k cuda --basetemp=/tmp/$f > $OUT/$f.log 2>&1
  t $f; tail -2 $OUT/$f.log | cut -c1-2000
done
python3 - <<'PY' > $OUT/chain-rows.txt
import glob, json
for f in sorted(glob.glob("/tmp/test_chain_*/**/w.json", recursive=True)):
    print(f.split("/")[2])
    for r in json.load(open(f))["rows"]:
        if r["op"] == "kforge::chain":
            print(" ", r["signature"], r["status"], r.get("eager_us"), r.get("best_us"), (r.get("detail") or "")[:400])
PY
grep -c "inserted" $OUT/chain-rows.txt; grep -v inserted $OUT/chain-rows.txt | cut -c1-400 | head -12
