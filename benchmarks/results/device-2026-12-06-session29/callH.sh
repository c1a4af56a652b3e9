# Session 29, call H: where Swin-T's host time goes with the plugin on (the zoo's Swin-T was
# 0.968x in one process, its forward host-bound: the host issued it in 13.44 ms on, 12.69 off).
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session29/callH.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callH.sh")
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s)
t() { echo "== $(($(date +%s) - T0)) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
t built
for m in swin_tiny bert_base; do
  [ $(($(date +%s) - T0)) -lt 130 ] || { t "$m skipped: time"; continue; }
  KFORGE_CACHE_DIR=/tmp/hc-$m python3 -m kernel_forge warmup --time-budget 45 benchmarks/zoo/models/$m.py \
    > "$OUT/$m-warmup.log" 2>&1
  t "$m warm-up"; grep -E "kernels inserted|priority is" "$OUT/$m-warmup.log" | cut -c1-200
  KFORGE_CACHE_DIR=/tmp/hc-$m python3 benchmarks/zoo/models/$m.py --plugin --iters 10 --ab 2 --profile 5 \
    > "$OUT/$m-profile.log" 2>&1
  t "$m profile"; grep -v "^ZOO\|^PROFILE\|USDT" "$OUT/$m-profile.log" | cut -c1-160
  grep "^ZOO" "$OUT/$m-profile.log" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()[4:]); print('ab', {k: d['ab'][k] for k in ('enabled_ms','disabled_ms','speedup','enabled_host_ms','disabled_host_ms')}); print('chains', d['chains'])"
done
