#!/bin/bash
# rep.sh TAG KFORGE_ROOT: instructions per chain run of chainmb.py under callgrind, plugin on (3
# processes) and switched off (2), under inference_mode and no_grad. KFORGE_ROOT holds the
# kernel_forge package to import; ./cache is chainmb.py's warm-up cache (README); CC is a compiler
# wrapper adding -mno-avx512f (valgrind), the same for the warm-up and these runs.
cd "$(dirname "$0")"
PY=$(python3 -c 'import sys; print(sys.executable)')
for g in inf no_grad; do
  for mode in on on on off off; do
    out=/tmp/rep-$1-$g-$mode-$RANDOM.out
    CMB_MODE=$mode CMB_GRAD=$([ $g = no_grad ] && echo no_grad) KFORGE_CACHE_DIR=$PWD/cache \
      OMP_WAIT_POLICY=passive PYTHONPATH=$2 setarch x86_64 -R valgrind --tool=callgrind \
      --instr-atstart=no --collect-atstart=no --callgrind-out-file=$out $PY chainmb.py > $out.log 2>&1
    ir=$(grep -h "Collected" $out.log | awk '{print $4}')
    echo "$1 $g $mode $((ir / 120)) $(grep -o "'served', [0-9]*, [0-9]*" $out.log)"
  done
done
