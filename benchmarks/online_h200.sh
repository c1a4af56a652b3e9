#!/usr/bin/env bash
# Online tuning on the H200 (issue 21), in one device call of at most 10 minutes, build included:
#
#   run(kind="nvidia-h200-x2", carry=[".debs"], timeout_s=600,
#       command="bash benchmarks/online_h200.sh")
#
# Two zoo models as they are (vit_base, bert_base: bf16, their default sizes), each through
# benchmarks/online_tuning.py: eager for EAGER_S seconds, then KFORGE_TUNE=1 for ONLINE_S seconds
# (time to the first kernel, p50/p99 forward while tuning against eager, final speedup), then
# `kforge warmup --time-budget WARMUP_BUDGET` and the loop served from its cache, when it fits.
# With two GPUs visible the models run at once, one per GPU (CUDA_VISIBLE_DEVICES); with one, one
# after the other, ONLINE_S shrunk to fit (with two models, no warmup comparison: the table says so).
# Everything is sized from LIMIT (seconds for the whole call, default 585) after the build.
# Output, under $OUT: online-h200.md (the table), vit_base.json, bert_base.json, logs.tgz.
# SKIP_BUILD=1: the plugin is built already (an earlier call on the same warm machine).
# BENCH_ARGS: more options for online_tuning.py, e.g. "--burst-ms 200 --idle-ms 300" (a model
# with pauses: the tuner's timings then wait for them; the default loop never pauses).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/online-h200-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
T0=$(date +%s)
t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
LIMIT=${LIMIT:-585}
EAGER_S=${EAGER_S:-20}
WARMUP_BUDGET=${WARMUP_BUDGET:-45}
MODELS=${MODELS:-"vit_base bert_base"}
LOGS=/tmp/online-h200-logs
mkdir -p "$LOGS"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/device-build.sh > "$LOGS/build.log" 2>&1 || { tail -30 "$LOGS/build.log"; exit 1; }
  tail -1 "$LOGS/build.log"
fi
t built
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
python3 -c "import timm, transformers" 2>/dev/null || echo "== timm or transformers missing: the zoo scripts will fail"
# seconds left for the models, less 25 for the report; per model: a process start (the model
# built, the plugin loaded: about 15 s) per phase, and the warmup comparison (two script runs,
# the searches, the served loop: about WARMUP_BUDGET + 75 s)
left=$(( LIMIT - ($(date +%s) - T0) - 25 ))
warm_cost=$(( WARMUP_BUDGET + 75 ))
nmodels=$(echo $MODELS | wc -w)
if [ "$ngpu" -ge 2 ]; then per=$left; else per=$(( left / nmodels )); fi
online=$(( per - EAGER_S - 35 - warm_cost ))
warm=1
if [ "$online" -lt 240 ]; then online=$(( per - EAGER_S - 35 )); warm=0; fi
[ "$online" -gt 300 ] && online=300
if [ "$online" -lt 30 ]; then echo "== only $left s left after the build: not enough"; exit 1; fi
echo "== $ngpu GPUs; per model: eager $EAGER_S s, online $online s, warmup comparison: $warm"
run_model() {  # model, GPU index
  local m=$1 gpu=$2 extra=()
  [ "$warm" = 1 ] && extra=(--compare-warmup "--warmup-args=--time-budget $WARMUP_BUDGET")
  CUDA_VISIBLE_DEVICES=$gpu timeout $(( per - 5 )) python3 benchmarks/online_tuning.py \
    --model "benchmarks/zoo/models/$m.py" --device cuda --seconds "$online" \
    --eager-seconds "$EAGER_S" --env KFORGE_LOG=info ${BENCH_ARGS:-} "${extra[@]}" \
    --out "$OUT/$m.json" \
    > "$LOGS/$m.log" 2>&1
  echo "== $(( $(date +%s) - T0 )) s: $m done (exit $?)"
}
i=0
for m in $MODELS; do
  if [ "$ngpu" -ge 2 ]; then run_model "$m" "$i" & else run_model "$m" 0; fi
  i=$(( i + 1 ))
done
wait
t models
python3 - "$OUT" "$ngpu" "$online" "$warm" $MODELS <<'EOF' > "$OUT/online-h200.md"
import json, os, sys
out, ngpu, online, warm, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
f = lambda v, p="%.3f": "-" if v is None else p % v
print(f"# Online tuning on the H200 ({ngpu} GPUs visible; KFORGE_TUNE=1 for {online} s per model,"
      f" defaults otherwise; warmup comparison: {'yes' if warm == '1' else 'no (no time)'})\n")
print("| model | eager p50 / p99 ms | first kernel s (from start / after hot) | landed (ramp, deep) "
      "| p50 / p99 while tuning (x eager) | final p50 ms (speedup) | gates quiet / busy "
      "| searches | kforge warmup speedup |")
print("|---|---|---|---|---|---|---|---|---|")
for m in models:
    try:
        d = json.load(open(os.path.join(out, m + ".json")))
    except (OSError, ValueError) as e:
        print(f"| {m} | failed: no result ({e.__class__.__name__}); see logs.tgz | | | | | | | |")
        continue
    e, o = d["eager"], d["online"]
    dt, fin, g = o["during_tuning"], o["final"], o.get("gates") or {}
    passes = [r.get("pass") for r in o["landed"]]
    w = d.get("warmup")
    print(f"| {m} | {f(e['p50_ms'])} / {f(e['p99_ms'])} | {f(o['first_kernel_s'], '%.1f')} / "
          f"{f(o['first_kernel_after_hot_s'], '%.1f')} | {len(passes)} ({passes.count('ramp')}, "
          f"{passes.count('deep')}) | {f(dt['p50_ms'])} / {f(dt['p99_ms'])} "
          f"({f(dt.get('p50_vs_eager'), '%.2f')} / {f(dt.get('p99_vs_eager'), '%.2f')}) | "
          f"{f(fin['p50_ms'])} ({f(o.get('final_speedup'), '%.2fx')}) | {g.get('quiet', '-')} / "
          f"{g.get('busy', '-')} | {o.get('searches')} | "
          f"{f(w.get('speedup'), '%.2fx') if w else '-'} |")
for m in models:
    try:
        o = json.load(open(os.path.join(out, m + ".json")))["online"]
    except (OSError, ValueError):
        continue
    landed = "; ".join(f"{r['signature']} ({r['pass']}, at {r['t']:.0f} s, confirmed at "
                       f"{f(r.get('confirmed_ratio'))} of eager)" for r in o["landed"])
    print(f"\n{m}: landed {landed or 'nothing'}")
    for r in (o.get("refused") or [])[:6]:
        print(f"- refused {r['signature']} ({r['pass']}): {r['reason'][:200]}")
    print(f"- time spent: {o.get('time_spent_s')}")
EOF
cat "$OUT/online-h200.md"
tar czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null
t done
