# Session 38, call O: after the packs' stores (kf_pack_st: call N's NF-ResNet chain, f16
# channels_last add -> relu -> mul, stored its packs in 2-byte pieces from its unrolled row
# loop, 576 us against eager's 246): the f16 channels_last chain tests, then held-out NF-ResNet-26
# and PVT-v2-B0 (defaults, no compile), then MLP-Mixer beside torch.compile.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callG.sh \
#     benchmarks/results/device-2026-12-07-session38/callO.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callO.sh")
set -u
export T0=$(date +%s)
sed -i -e '/^run_zoo zoo /d' -e '/^\[ "\${HELD/d' callG.sh
TEST=0 source callG.sh
[ "${TEST:-1}" = 0 ] || timeout 120 python3 -m pytest -q -m gpu tests/python/test_chain_batch_norm.py > "$OUT/gpu-test.log" 2>&1
tail -3 "$OUT/gpu-test.log"; echo "tested at $(($(date +%s) - T0)) s"
for m in nf_resnet26 pvt_v2_b0; do
  rm -rf /tmp/zw-$m
  python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models $m --budget 60 --eager-runs 1 \
    --plugin-runs 1 --ab 4 --no-compile --time-limit 240 --work /tmp/zw-$m --out "$OUT/$m" > "$OUT/$m.log" 2>&1
  echo "== $m done at $(($(date +%s) - T0)) s"
  sed -n '/^| model/,/^$/p' "$OUT/$m/zoo.md" | tail -2; grep "^- " "$OUT/$m/zoo.md" | grep -o "chains:.*" | cut -c1-900
  grep -h "^chain" /tmp/zw-$m/logs/*-warmup.log | cut -c1-200 | head -8
  rm -f "$OUT/$m/zoo-logs.tgz"
done
left=$((${CALL_S:-570} - ($(date +%s) - T0) - 5))
[ "${MIX:-1}" = 1 ] && [ $left -gt 150 ] && run_zoo mixer benchmarks/heldout mixer_b16 $left --eager-runs 1 --plugin-runs 1
true
