#!/bin/bash
# Per model: eager (KFORGE_DISABLE=1), `kforge warmup --time-budget 120`, a fresh process served
# from that cache, eager again, and the served output against eager's.
#   bash run.sh gpt2 mistral t5 gemma      (work files in $NU, default /tmp/nu)
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../../.." && pwd)
NU=${NU:-/tmp/nu}; mkdir -p $NU; cp "$HERE/model.py" $NU/; cd $NU
export PYTHONPATH=$ROOT OMP_NUM_THREADS=1
for m in "$@"; do
  export NU_MODEL=$m
  KFORGE_DISABLE=1 NU_OUT=$NU/$m-eager.pt python3 model.py 2>&1 | grep '^NU'
  rm -rf $NU/cache-$m
  KFORGE_CACHE_DIR=$NU/cache-$m python3 -m kernel_forge.cli warmup --time-budget 120 model.py > $NU/$m-warmup.log 2>&1; echo "warmup rc $?"
  grep -E 'inserted|chain' $NU/$m-warmup.log | tr '\r' '\n' | grep -v ETA | cut -c1-180 | head -12
  KFORGE_CACHE_DIR=$NU/cache-$m NU_OUT=$NU/$m-served.pt python3 -c "import kernel_forge, runpy; runpy.run_path('model.py')" 2>&1 | grep -E '^NU|WARN|rror' | head -5
  KFORGE_DISABLE=1 NU_OUT=$NU/$m-eager2.pt python3 model.py 2>&1 | grep '^NU'
  python3 -c "
import torch; a=torch.load('$NU/$m-eager.pt'); b=torch.load('$NU/$m-served.pt')
print('$m max abs diff', (a-b).abs().max().item(), 'scale', a.abs().max().item())"
done
