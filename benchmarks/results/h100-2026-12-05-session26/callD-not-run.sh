# Session 26, call D: two held-out models with the CUDA group-norm chain in the build: PoolFormer-S12
# (residual add then a one-group norm: 64 groups at batch 64, a cluster per group) and GPT-2, the
# zoo's runner with the warm-up's default options (scripts/device-zoo.sh: --budget 60, --ab 4).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/h100-2026-12-05-session26/callD.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callD.sh")
nvidia-smi --query-gpu=name --format=csv,noheader
MODELS_DIR=benchmarks/heldout bash scripts/device-zoo.sh poolformer_s12,gpt2
grep -h "chain" /tmp/zw/logs/*-warmup.log 2>/dev/null | grep -v "^\s*$" | tail -16 | cut -c1-300
