#!/usr/bin/env bash
# Session 19, call C: the host cost of the plugin on the H200 (per call: dispatch_overhead.py;
# per forward: ViT-Base's host time to issue a forward in fresh processes, eager / pass-through /
# served), and ConvNeXt-T after the chain memory-order and ranking fixes.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
export PYTHONPATH=$PWD
timeout 150 python3 benchmarks/dispatch_overhead.py --device cuda --rounds 3 --json $OUT/dispatch.json > $OUT/dispatch.txt 2>$OUT/dispatch.err
t dispatch; sed -n '/median of 3/,/^$/p' $OUT/dispatch.txt
M=benchmarks/zoo/models/vit_base.py
mkdir -p /tmp/vc /tmp/empty
timeout 200 python3 -m kernel_forge warmup --time-budget 60 --json $OUT/vit-warmup.json $M > $OUT/vit-warmup.log 2>&1
t vit warm-up
host() { grep '^ZOO ' "$1" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()[4:]); print(f\"median {d['median_ms']:.3f} ms, host {d['host_median_ms']:.3f} ms\")"; }
for r in 1 2; do
  python3 $M > $OUT/vit-eager$r.log 2>&1; echo "eager: $(host $OUT/vit-eager$r.log)"
  KFORGE_CACHE_DIR=/tmp/empty KFORGE_INTERCEPT=all python3 $M --plugin > $OUT/vit-pass$r.log 2>&1; echo "pass-through: $(host $OUT/vit-pass$r.log)"
  python3 $M --plugin > $OUT/vit-served$r.log 2>&1; echo "served: $(host $OUT/vit-served$r.log)"
done
t vit host
if command -v perf >/dev/null; then  # where a served forward's host time goes
  python3 - > $OUT/vit-perf-run.log 2>&1 <<'PY' &
import os, runpy, sys, time
sys.argv = ["vit_base.py", "--plugin", "--iters", "3000"]
runpy.run_path("benchmarks/zoo/models/vit_base.py", run_name="__main__")
PY
  sleep 14; perf record -F 2000 -g -p $! -o /tmp/perf.data -- sleep 8 > /dev/null 2>&1; wait
  perf report -i /tmp/perf.data --no-children --sort dso,sym -g none 2>/dev/null | grep -v "^#" | grep "%" | head -70 > $OUT/vit-perf.txt
  t perf; head -40 $OUT/vit-perf.txt
else
  echo "no perf"
fi
LEFT=$(( 560 - ($(date +%s) - T0) ))
python3 benchmarks/zoo/run.py --models convnext_tiny --budget 60 --no-compile \
  --eager-runs 1 --plugin-runs 2 --ab 4 --time-limit $(( LEFT - 5 )) --work /tmp/zw --out $OUT/zoo > $OUT/zoo.log 2>&1
t zoo; sed -n '/^| model/,/^$/p' $OUT/zoo/zoo.md; grep -E "^- " $OUT/zoo/zoo.md | cut -c1-1500
