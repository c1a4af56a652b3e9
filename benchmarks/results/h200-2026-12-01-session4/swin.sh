#!/usr/bin/env bash
# Swin-T host time: where does the plugin's extra enqueue time go? Then llama_prefill under no_grad.
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; cp /tmp/build.log $OUT/; exit 1; }
fi
t built
W=/tmp/zw; mkdir -p $W
timeout 200 python3 benchmarks/zoo/run.py --models swin_tiny --budget 60 --no-compile --eager-runs 2 \
  --plugin-runs 2 --work $W --out $OUT/zoo-swin > $W/zoo-swin.log 2>&1
grep "^|" $OUT/zoo-swin/zoo.md; t zoo-swin
M=benchmarks/zoo/models/swin_tiny.py
C=$W/cache-swin_tiny
v() {  # label, env..., -- args
  local label=$1; shift
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" KFORGE_CACHE_DIR=$C timeout 60 python3 $M --iters 60 "$@" 2>$W/$label.err | grep '^ZOO' \
    | python3 -c "import json,sys; d=json.loads(sys.stdin.read()[4:]); print('$label', 'gpu %.3f host %.3f served %s' % (d['median_ms'], d['host_median_ms'], d.get('served_calls')))" \
    || tail -3 $W/$label.err
}
for r in 1 2; do
  v eager X=1 --
  v plugin X=1 -- --plugin
  v plugin-nosample KFORGE_SAMPLE_EVERY=1000000 KFORGE_EAGER_SAMPLE_EVERY=0 -- --plugin
  v plugin-disable KFORGE_DISABLE=1 -- --plugin
  v plugin-noreload KFORGE_RELOAD_MS=3600000 -- --plugin
done 2>&1 | tee $OUT/swin-variants.txt
t variants
python3 -m zipfile -e .diag/py_spy-*.whl /tmp/pyspy; PS=$(find /tmp/pyspy -name py-spy -type f | head -1); chmod +x $PS
for mode in eager plugin; do
  flag=; [ $mode = plugin ] && flag=--plugin
  KFORGE_CACHE_DIR=$C timeout 90 $PS record --native -r 250 -f raw -o $W/spy-$mode.txt -- python3 $M --iters 300 $flag > $W/spy-$mode.log 2>&1
  tail -2 $W/spy-$mode.log | cut -c1-300
  python3 .diag/folded_top.py $W/spy-$mode.txt > $OUT/spy-$mode-top.txt 2>&1; head -25 $OUT/spy-$mode-top.txt
done
t pyspy
for mode in eager plugin; do
  flag=; [ $mode = plugin ] && flag=--plugin
  KFORGE_CACHE_DIR=$C timeout 60 python3 .diag/prof_cpu.py $M --iters 10 $flag > $W/prof-$mode.txt 2>&1
done
paste -d'\n' /dev/null > /dev/null; cat $W/prof-eager.txt $W/prof-plugin.txt > $OUT/prof-cpu.txt; head -40 $W/prof-plugin.txt
t prof
if [ $(( $(date +%s) - T0 )) -lt 400 ]; then
  timeout $(( 570 - ($(date +%s) - T0) )) python3 benchmarks/zoo/run.py --models llama_prefill --budget 60 --no-compile \
    --eager-runs 1 --model-args "--grad-mode no_grad" --time-limit $(( 560 - ($(date +%s) - T0) )) --work $W/lp --out $OUT/zoo-lp > $W/zoo-lp.log 2>&1
  grep "^|" $OUT/zoo-lp/zoo.md; t llama-prefill
fi
tar czf $OUT/logs.tgz -C $W --exclude='*.pt' --exclude='cache-*' . 2>/dev/null
t done
