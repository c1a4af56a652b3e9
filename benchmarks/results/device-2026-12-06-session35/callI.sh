# Session 35, call I: the tile walk with its loops unrolled (a02ef0e) and the row walk's layer
# norm in packed registers (7d27c93) on the GPU, in one call: the GPU tests of the layer-norm
# chains, the chain kernels alone (callH.sh: Whisper's and MLP-Mixer's transposed shapes, DeiT's
# row walk), then Whisper's encoder (zoo) beside torch.compile in what time is left (callG.sh,
# fresh processes, defaults).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/call[GHI].sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callI.sh")
set -u
export T0=$(date +%s) PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
timeout 150 python3 -m pytest -q -m gpu -k "layer_norm or transposed" tests/python/test_chain_jobs.py \
  tests/python/test_chain_transposed_norm.py > "$OUT/gpu-test.log" 2>&1
tail -3 "$OUT/gpu-test.log"
echo "tested at $(($(date +%s) - T0)) s"
SKIP_BUILD=1 NOCHECK=1 BUDGET=30 bash callH.sh
export TEST=0 HELD=0 SKIP_BUILD=1
FIRST_S=$((${CALL_S:-575} - ($(date +%s) - T0))) bash callG.sh
