#!/usr/bin/env bash
# efficientnet_b0 slower with the plugin: repeat, and split the cause
export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
t built
W=/tmp/zw; rm -rf $W
timeout 200 python3 benchmarks/zoo/run.py --models efficientnet_b0 --budget 60 --no-compile \
  --work $W --out $OUT/zoo-eff > $OUT/eff-run.log 2>&1
grep "^|" $OUT/zoo-eff/zoo.md; t zoo-eff
M=benchmarks/zoo/models/efficientnet_b0.py
C=$(ls -d $W/cache-* | head -1); echo "cache $C"
line() { grep -o '"median_ms": [0-9.]*\|"min_ms": [0-9.]*\|"host_median_ms": [0-9.]*\|"served_calls": [0-9]*' | tr '\n' ' '; echo; }
for i in 1 2; do echo -n "eager $i: "; python3 $M 2>&1 | line; done
for i in 1 2; do echo -n "plugin $i: "; KFORGE_CACHE_DIR=$C python3 $M --plugin 2>&1 | line; done
echo -n "plugin DISABLE: "; KFORGE_DISABLE=1 KFORGE_CACHE_DIR=$C python3 $M --plugin 2>&1 | line
echo -n "plugin empty cache: "; KFORGE_CACHE_DIR=/tmp/empty-cache python3 $M --plugin 2>&1 | line
echo -n "plugin TYPED=0: "; KFORGE_TYPED=0 KFORGE_CACHE_DIR=$C python3 $M --plugin 2>&1 | line
t variants
timeout 100 python3 .diag/prof.py $M --iters 10 --warmup 3 > $OUT/prof-eager.log 2>&1
KFORGE_CACHE_DIR=$C timeout 100 python3 .diag/prof.py $M --plugin --iters 10 --warmup 3 > $OUT/prof-plugin.log 2>&1
t profiles
