# Session 25, call B: host time per served `add -> layer_norm` chain run on the GPU
# (benchmarks/chain_host_cost.py: on and off interleaved forward by forward in one process), at
# DeiT-Small's shape, old build (cfe967f) vs new (HEAD), eager alone,
# no_grad, speed-guard samples off. Then the zoo's DeiT-Small and ViT-Base on the new build.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
(cd old && bash scripts/device-build.sh > $OUT/build-old.log 2>&1) || { tail -30 $OUT/build-old.log; exit 1; }
rm -rf /tmp/kf_old && mkdir /tmp/kf_old && cp -r old/kernel_forge /tmp/kf_old/ && t built old
bash scripts/device-build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
t built new
B=benchmarks/chain_host_cost.py
for S in 64,197,384; do
  C=/tmp/chc-$S
  KFORGE_CACHE_DIR=$C timeout 100 python3 -m kernel_forge warmup --time-budget 25 $B --shape $S > $OUT/warmup-$S.log 2>&1
  t warmup $S; grep -E "chain|inserted" $OUT/warmup-$S.log | tail -4 | cut -c1-200
  run() { local tag=$1; shift; env KFORGE_CACHE_DIR=$C "$@" --shape $S --measure 1000 2>&1 | grep "^HOST " | sed "s/^HOST /$S $tag /" >> $OUT/host.txt; }
  for r in 1 2; do
    run new timeout 60 python3 $B
    run old env PYTHONPATH=/tmp/kf_old:$PWD timeout 60 python3 $B
    run eager timeout 60 python3 $B --no-plugin
  done
  run new-nograd timeout 60 python3 $B --grad-mode no_grad
  run eager-nograd timeout 60 python3 $B --grad-mode no_grad --no-plugin
  run new-nosample env KFORGE_SAMPLE_EVERY=1000000000 timeout 60 python3 $B
  t measured $S
done
python3 - $OUT/host.txt <<'PY'
import json, sys
for line in open(sys.argv[1]):
    s, tag, js = line.split(" ", 2); r = json.loads(js)
    sides = [k for k in ("on", "off", "eager") if k in r]
    txt = "  ".join(f"{k} host p10 {r[k]['host_us']['p10']:6.2f} med {r[k]['host_us']['median']:6.2f} dev p10 {r[k]['device_us']['p10']:6.2f}" for k in sides)
    ch = ";".join(f"{c['state']} {c['completed']}/{c['heads']}" for c in r.get("chains", []))
    print(f"{s:11s} {tag:13s} {txt} {ch}")
PY
LEFT=$((585 - ($(date +%s) - T0)))
python3 benchmarks/zoo/run.py --models-dir benchmarks/heldout --models deit_small --budget 30 --no-compile --eager-runs 1 --plugin-runs 2 --ab 8 --time-limit $((LEFT / 2)) --work /tmp/zw1 --out $OUT/zoo-deit > $OUT/zoo-deit.log 2>&1
t deit; grep -E "^- deit" $OUT/zoo-deit/zoo.md | cut -c1-900
LEFT=$((585 - ($(date +%s) - T0)))
python3 benchmarks/zoo/run.py --models vit_base --budget 60 --no-compile --eager-runs 1 --plugin-runs 2 --ab 8 --time-limit $((LEFT - 5)) --work /tmp/zw2 --out $OUT/zoo-vit > $OUT/zoo-vit.log 2>&1
t vit; grep -E "^- vit" $OUT/zoo-vit/zoo.md | cut -c1-900
