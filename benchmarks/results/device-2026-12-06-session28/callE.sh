# Session 28, call E: the UNet (call C) and the held-out PoolFormer-S12 and GPT-2 (call D) again
# after a738869, whose warm-up measures a GPU row's copy bandwidth on the GPU (calls C and D ranked
# GPU rows against the host's copy: 79-192 GB/s, so the UNet's group-norm chains were never tuned).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built
python3 benchmarks/zoo/run.py --models unet --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 \
  --ab 8 --time-limit 170 --work /tmp/zu --out $OUT/zoo-unet > $OUT/zoo-unet.log 2>&1
t unet; grep -E "^- unet" $OUT/zoo-unet/zoo.md | cut -c1-1500
grep -h "priority is\|chain" /tmp/zu/logs/*-warmup.log | tail -18 | cut -c1-230
LEFT=$((560 - ($(date +%s) - T0)))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models poolformer_s12,gpt2 --budget 60 --no-compile --eager-runs 1 \
  --plugin-runs 2 --ab 4 --time-limit $((LEFT - 5)) --work /tmp/zw --out "$OUT/zoo" > "$OUT/zoo.log" 2>&1
t zoo; grep -E "^- " "$OUT/zoo/zoo.md" | cut -c1-1500
grep -h "priority is time x headroom" /tmp/zw/logs/*-warmup.log 2>/dev/null | cut -c1-300
