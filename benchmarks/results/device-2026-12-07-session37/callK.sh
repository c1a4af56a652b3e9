# Session 37, call K: models held out from this project that never ran on a GPU, defaults (no
# opt-in), fresh processes, no torch.compile (device time); then MLP-Mixer, whose transposed
# residual stream takes the tile walk.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callG.sh \
#     benchmarks/results/device-2026-12-07-session37/callK.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callK.sh")
set -u
export T0=$(date +%s)
sed -i -e '/^run_zoo zoo /d' -e '/^\[ "\${HELD/d' callG.sh
TEST=0 source callG.sh
run_zoo held benchmarks/heldout "${MODELS_HELD:-ghostnet,shufflenet_v2,pvt_v2_b0,mixer_b16}" \
  $((${CALL_S:-560} - ($(date +%s) - T0) - 5)) --no-compile
true
