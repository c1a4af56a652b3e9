# Session 26, call C: the CUDA group-norm chain tail (9c2fde3, clusters 653f986): its GPU test
# (its few groups start from a cluster per group) with every candidate's knobs and status, the GPU
# tests of chain serving, then the zoo's UNet
# (four `add -> native_group_norm` chains, 24% of its recorded time in session 16) with the
# warm-up's default options, fresh processes and in-process on/off blocks.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/h100-2026-12-05-session26/callC.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callC.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 280 python3 -m pytest -q -m gpu tests/python/test_chain_group_norm.py -k cuda --basetemp=/tmp/gnt > $OUT/gn-test.log 2>&1
t gn test; tail -4 $OUT/gn-test.log | cut -c1-2000
python3 - <<'PY' | tee $OUT/gn-nodes.txt
import glob, json
for f in sorted(glob.glob("/tmp/gnt/**/tree.json", recursive=True)):
    t = json.load(open(f)); ns = t.get("nodes", [])
    print(f.split("/jobs/")[-1][:60], len(ns), "nodes")
    for n in ns[:40]:
        m = n.get("meta", {}); print("   ", n.get("status"), m.get("template"), json.dumps(m.get("knobs")), n.get("time_us", n.get("time", "")))
PY
timeout 100 python3 -m pytest -q -m gpu tests/python/test_chain_serving.py tests/python/test_chain_inference.py > $OUT/chain-gpu-tests.log 2>&1
t chain gpu tests; tail -3 $OUT/chain-gpu-tests.log
LEFT=$((585 - ($(date +%s) - T0)))
python3 benchmarks/zoo/run.py --models unet --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 \
  --ab 8 --time-limit $((LEFT - 5)) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; grep -E "^- unet" $OUT/zoo/zoo.md | cut -c1-1500
grep -h "chain" /tmp/zw/logs/*-warmup.log 2>/dev/null | tail -12 | cut -c1-300
