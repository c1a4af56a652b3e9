# Session 39, call Q: the tile walk after 225a2f1 (loops unrolled by 4, y in packs): its GPU test,
# its renders beside session 38's at MLP-Mixer's and Whisper's shapes (tw/bench.py, CuPy), then
# the held-out MLP-Mixer beside torch.compile (fresh processes, defaults).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callG.sh \
#     benchmarks/results/device-2026-12-07-session39/callQ.sh .snap/ && cp -r <the renders, bench.py, k2.cu> .snap/tw (README)
#   run(carry=[".snap"], command="cd .snap && bash callQ.sh")
set -u
export T0=$(date +%s)
sed -i -e '/^run_zoo zoo /d' -e '/^\[ "\${HELD/d' -e 's/test_chain_transposed_norm.py/test_chain_transposed_norm.py tests\/python\/test_chain_batch_norm.py/' callG.sh
source callG.sh
(cd tw && ONLY=${ONLY:-mixA_start,mixA_new,mixA_newvec,mixB_start,mixB_new,mixB_newvec,whB_start,whB_new,whB_newvec,whB_k2_tr32_u4} \
  python3 bench.py 2>&1 | grep -v Warning | tee "$OUT/tile.log")
echo "tile walk timed at $(($(date +%s) - T0)) s"
run_zoo mixer benchmarks/heldout mixer_b16 $((${CALL_S:-570} - ($(date +%s) - T0) - 5))
true
