# Session 40, call W: the model check with hooks on the outermost modules alone after its untimed
# round (global hooks cost PVT-v2-B0 1.5 ms of host time a forward under the check in call V:
# every kernel 4.787 ms there, 3.277 ms in arms.py). Per model: the warm-up (defaults), then
# arms.py with what the check left (chain entries it disabled stay disabled).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-07-session40/{callW.sh,arms.py} .snap/
#   run(carry=[".snap"], command="cd .snap && bash callW.sh", kind="nvidia-h100-x1")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
for mf in ${MODELS:-pvt_v2_b0:pvt_v2_b0:vit ghostnet:ghostnet_100:cnn}; do
  m=${mf%%:*} fam=${mf##*:} tn=${mf#*:}; tn=${tn%%:*}
  export KFORGE_CACHE_DIR=/tmp/cw-$m
  timeout 200 python3 -m kernel_forge warmup --time-budget 60 benchmarks/heldout/$m.py > "$OUT/$m-warmup.log" 2>&1
  grep "model check:" "$OUT/$m-warmup.log" | cut -c1-320
  echo "$m warmed up at $(($(date +%s) - T0)) s"
  timeout 150 python3 arms.py $tn $fam > "$OUT/$m-arms.log" 2>&1
  grep -v "^entry" "$OUT/$m-arms.log" | grep -v -i warn | head -4 | cut -c1-220
  grep "^entry" "$OUT/$m-arms.log" | cut -c1-200
done
echo "done at $(($(date +%s) - T0)) s"
true
