# Session 26, call C: the CUDA group-norm chain tail (9c2fde3): its GPU test, then the zoo's UNet
# (four `add -> native_group_norm` chains, 24% of its recorded time in session 16) with the
# warm-up's default options, fresh processes and in-process on/off blocks.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/h200-2026-12-05-session26/callC.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callC.sh")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 280 python3 -m pytest -q -m gpu tests/python/test_chain_group_norm.py -k cuda > $OUT/gn-test.log 2>&1
t gn test; tail -4 $OUT/gn-test.log | cut -c1-2000
LEFT=$((585 - ($(date +%s) - T0)))
python3 benchmarks/zoo/run.py --models unet --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 \
  --ab 8 --time-limit $((LEFT - 5)) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; grep -E "^- unet" $OUT/zoo/zoo.md | cut -c1-1500
grep -h "chain" /tmp/zw/logs/*-warmup.log 2>/dev/null | tail -12 | cut -c1-300
