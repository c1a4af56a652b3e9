# Session 36, call J (for the next session): the two fixes of this session on the GPU, each step
# as time allows (CALL_S, default 560 s). The GPU tests of the batch-norm chains (f16
# channels_last block ends: bn -> add_ -> relu_ and bn -> add must verify now) and of the
# transposed norms; the tile walk alone at Whisper's and MLP-Mixer's shapes (its search now
# starts from 16 rows unstaged; session 36 found 83.2 / 92.2 us, session 34 71.4 / 58.8 us);
# then ResNet-50 with KFORGE_CHAIN_DEFERRED=1 beside torch.compile (session 36: 1.25x).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/call[EH].sh \
#     benchmarks/results/device-2026-12-07-session36/callJ.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callJ.sh")
set -u
export T0=$(date +%s) PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
left() { echo $((${CALL_S:-560} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
timeout 200 python3 -m pytest -q -m gpu tests/python/test_chain_batch_norm.py \
  tests/python/test_chain_transposed_norm.py > "$OUT/gpu-test.log" 2>&1
tail -30 "$OUT/gpu-test.log" | grep -v "^$" | cut -c1-400
echo "tested at $(($(date +%s) - T0)) s"
if [ "$(left)" -gt 120 ]; then
  # callH's whisper and mixer steps only
  sed -n '1,/^one whisper/p' callH.sh | grep -v "^one whisper" > /tmp/callH-one.sh
  SKIP_BUILD=1 NOCHECK=1 BUDGET=30 bash -c "source /tmp/callH-one.sh; one whisper --transposed --shape 16,1500,512; one mixer --transposed --shape 64,196,768"
fi
if [ "$(left)" -gt 200 ]; then
  sed -i -e 's|^bash scripts/device-build.sh.*$|true|' -e '/^run_zoo held/d' callE.sh
  FIRST_S=$(($(left) - 10)) bash callE.sh
fi
true
