# Session 27, call C (after call B, on its machine and build): the zoo's UNet (fp16: norm1 -> silu
# and add -> norm2 -> silu in each ResNet block) through the zoo's runner, in-process A/B included.
#   run(carry=[".snap"], command="cd .snap && bash callC-not-run.sh SECONDS")
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
LEFT=${1:-400}
nvidia-smi --query-gpu=name --format=csv,noheader
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
python3 benchmarks/zoo/run.py --models unet --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 \
  --ab 8 --time-limit $((LEFT - 15 - ($(date +%s) - T0))) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; grep -E "^- unet" $OUT/zoo/zoo.md | cut -c1-1500
grep -h "chain" /tmp/zw/logs/*-warmup.log 2>/dev/null | tail -14 | cut -c1-300
