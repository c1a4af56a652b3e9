# Session 39, call S: the tile walk's renders at two tile sizes and threads after the register fix
# (tw/bench.py, CuPy), then Whisper's encoder beside torch.compile with what time is left.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callG.sh \
#     benchmarks/results/device-2026-12-07-session39/callS.sh .snap/ && cp -r <the renders, bench.py, k2.cu> .snap/tw (README)
#   run(carry=[".snap"], command="cd .snap && CALL_S=330 bash callS.sh")
set -u
export T0=$(date +%s)
sed -i -e '/^run_zoo zoo /d' -e '/^\[ "\${HELD/d' callG.sh
TEST=0 source callG.sh
V=""
for c in mixA mixB whB; do for n in new newvec new32 new512 new512_16 new128; do V="$V,${c}_$n"; done; done
(cd tw && ONLY=${V#,},mixB_k2_tr32_u4,whB_k2_tr32_u4 python3 bench.py 2>&1 | grep -v Warning | tee "$OUT/tile.log")
echo "tile walk timed at $(($(date +%s) - T0)) s"
run_zoo zoo benchmarks/zoo/models whisper_encoder $((${CALL_S:-570} - ($(date +%s) - T0) - 5))
true
