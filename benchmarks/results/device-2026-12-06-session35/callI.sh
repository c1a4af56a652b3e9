# Session 35, call I: the tile walk with its loops unrolled (a02ef0e) and the row walk's layer
# norm in packed registers (7d27c93) on the GPU, in one call, each step as time allows (CALL_S,
# default 575 s): the chain kernels alone (callH.sh: Whisper's and MLP-Mixer's transposed
# shapes, DeiT's row walk; their warm-ups verify every candidate), the GPU tests of the
# layer-norm chains, then Whisper's encoder (zoo) beside torch.compile (callG.sh, fresh
# processes, defaults) where 200 s or more are left.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/call[GHI].sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callI.sh")
set -u
export T0=$(date +%s) PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
left() { echo $((${CALL_S:-575} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
SKIP_BUILD=1 NOCHECK=1 BUDGET=30 bash callH.sh
if [ "$(left)" -gt 40 ]; then
  t=$(left); [ "$t" -gt 150 ] && t=150
  timeout $((t - 10)) python3 -m pytest -q -m gpu -k "layer_norm or transposed or pending" tests/python/test_chain_jobs.py \
    tests/python/test_chain_transposed_norm.py tests/python/test_online_replace.py > "$OUT/gpu-test.log" 2>&1
  tail -3 "$OUT/gpu-test.log"
  echo "tested at $(($(date +%s) - T0)) s"
fi
export TEST=0 HELD=0 SKIP_BUILD=1
[ "$(left)" -ge 200 ] && FIRST_S=$(left) bash callG.sh
true
