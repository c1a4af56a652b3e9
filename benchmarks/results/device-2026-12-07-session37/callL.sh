# Session 37, call L: held-out PVT-v2-B0 again after 222c0ea (a kernel over 10x eager trusted
# within 4x of its roofline: its layer norm over 32 channels, eager 221 us, roofline 9 us, was
# no_faster_kernel, every candidate flagged) with the warm-up's model check in the zoo line
# (call K: its four add -> layer_norm chains, 1.35-6.97x in their jobs, went off, reason unlogged),
# and after 810b45b (the members those chains run get their own start points after the first pass).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session37/callL.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callL.sh")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models pvt_v2_b0 --budget 50 \
  --eager-runs 1 --plugin-runs 1 --ab 4 --settle 1 --no-compile --time-limit $((${CALL_S:-220} - ($(date +%s) - T0))) \
  --work /tmp/zw-pvt --out "$OUT/pvt" > "$OUT/pvt.log" 2>&1
echo "== pvt done at $(($(date +%s) - T0)) s"
sed -n '/^| model/,/^$/p' "$OUT/pvt/zoo.md"; grep "^- pvt" "$OUT/pvt/zoo.md" | cut -c1-1500
grep -h "model check\|native_layer_norm\|chain" /tmp/zw-pvt/logs/*-warmup.log | grep -v ETA | cut -c1-220 | tail -14
cp /tmp/zw-pvt/logs/*-warmup.log "$OUT/" 2>/dev/null; rm -f "$OUT/pvt/zoo-logs.tgz"
true
