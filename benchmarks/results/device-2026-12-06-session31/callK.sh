# Session 31, call K: the zoo's UNet and ResNet-50 after the two-pass warm-up under a time budget
# (start points of every job first, then deeper searches), with each job's time split
# (jobtimes.py: the last pass's tree), then the dispatch overhead on the device's host.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session31/{callK.sh,jobtimes.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callK.sh")
set -u
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
export KFORGE_KEEP_CASES=1
CALL_S=${CALL_S:-430} bash scripts/device-zoo.sh "${1:-unet,resnet50}"
for d in /tmp/zw/cache-*/jobs; do echo "== $d"; python3 jobtimes.py "$d"; done | tee "$OUT/jobtimes.txt" | grep -E "^==|total"
export PYTHONPATH=$PWD
timeout 60 python3 benchmarks/dispatch_overhead.py --calls 10000 --rounds 3 > "$OUT/dispatch-cpu.txt" 2>&1
sed -n '/median of 3/,/^$/p' "$OUT/dispatch-cpu.txt"
