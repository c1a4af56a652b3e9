# Session 38, call M: the held-out MLP-Mixer-B/16 beside torch.compile (goal: faster than compile),
# then held-out NF-ResNet-26 and Mistral prefill, which never ran on a GPU (defaults, fresh
# processes, no compile: device time).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callG.sh \
#     benchmarks/results/device-2026-12-07-session38/callM.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callM.sh")
set -u
export T0=$(date +%s)
sed -i -e '/^run_zoo zoo /d' -e '/^\[ "\${HELD/d' callG.sh
TEST=0 source callG.sh
run_zoo mixer benchmarks/heldout mixer_b16 ${FIRST_S:-270}
run_zoo held benchmarks/heldout "${MODELS_HELD:-nf_resnet26,mistral_prefill}" \
  $((${CALL_S:-570} - ($(date +%s) - T0) - 5)) --no-compile
true
