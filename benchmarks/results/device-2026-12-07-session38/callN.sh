# Session 38, call N: why NF-ResNet-26's add -> relu -> mul chains measured 0.43x eager in call M
# (its warm-up again, the chain job folders kept), and where MLP-Mixer's kernel time goes with
# the plugin against torch.compile (call M: 7.09 ms against 6.83 ms).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session38/{callN.sh,prof.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callN.sh")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
KFORGE_CACHE_DIR=/tmp/nfc timeout 150 python3 -m kernel_forge warmup --time-budget 60 --json "$OUT/nf-warmup.json" \
  benchmarks/heldout/nf_resnet26.py > "$OUT/nf-warmup.log" 2>&1
echo "== nf done at $(($(date +%s) - T0)) s"
grep -v ETA "$OUT/nf-warmup.log" | grep "chain" | cut -c1-200 | tail -8
CJ=$(grep -l '"chain"' /tmp/nfc/jobs/*/job.json | xargs -r -n1 dirname)
for j in $CJ; do
  echo "-- $j"; python3 -c "import json; d=json.load(open('$j/job.json')); print(json.dumps(d.get('inputs'))[:500]); print(json.dumps(d.get('outputs'))[:700])"
  tail -3 "$j/progress.jsonl" | cut -c1-200
done
[ -n "$CJ" ] && tar czf "$OUT/nf-chain-jobs.tgz" --exclude=cases --exclude=blobs $CJ 2>/dev/null
KFORGE_CACHE_DIR=/tmp/mc timeout 150 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/mixer_b16.py \
  > "$OUT/mixer-warmup.log" 2>&1
echo "== mixer warm-up done at $(($(date +%s) - T0)) s"
for m in eager plugin compile; do
  KFORGE_CACHE_DIR=/tmp/mc timeout 200 python3 prof.py mixer_b16_224 $m > "$OUT/mixer-prof-$m.log" 2>&1
  head -30 "$OUT/mixer-prof-$m.log" | cut -c1-160
done
echo "== done at $(($(date +%s) - T0)) s"
true
