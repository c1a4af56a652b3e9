export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
timeout 100 python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider tests/python/test_chain_serving.py tests/python/test_chain_inference.py tests/python/test_chain_layer_norm.py tests/python/test_chain_weight_cast.py tests/python/test_chain_jobs.py > $OUT/chain.log 2>&1
tail -4 $OUT/chain.log; t chain
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models deit_small --budget 40 --no-compile --eager-runs 1 --plugin-runs 1 --ab 6 --time-limit 120 --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; grep -E "^- deit" $OUT/zoo/zoo.md | cut -c1-900
