# Session 35, call I: the tile walk with its loops unrolled (a02ef0e) on the GPU, in one call:
# first the layer-norm chain kernels alone (callH.sh: Whisper's and MLP-Mixer's transposed shapes,
# DeiT's row walk), then Whisper's encoder (zoo) beside torch.compile, then the held-out MLP-Mixer
# (no compile) in what time is left; fresh processes, defaults.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/call[GHI].sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callI.sh")
set -u
T0=$(date +%s)
NOCHECK=1 bash callH.sh  # builds, then the three chains alone
export TEST=0 FIRST_S=${FIRST_S:-230} CALL_S=${CALL_S:-570} SKIP_BUILD=1 T0
bash callG.sh
