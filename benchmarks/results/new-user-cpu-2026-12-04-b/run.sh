#!/bin/bash
# Per model: eager (KFORGE_DISABLE=1), `kforge warmup --time-budget $BUDGET model.py NAME` with default
# options, a fresh process served from that cache (import kernel_forge), eager again, and the
# served output against eager's. Full logs go to DIR/logs/.
#   bash run.sh gemma3 qwen3 olmo2     (work files in $NU, default /tmp/nu5)
#   DIR: the folder of model.py and logs/ (default this script's), BUDGET: seconds (default 90)
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../../.." && pwd)
DIR=$(cd "${DIR:-$HERE}" && pwd); BUDGET=${BUDGET:-90}
NU=${NU:-/tmp/nu5}; mkdir -p $NU $DIR/logs; cp "$DIR/model.py" $NU/; cd $NU
export PYTHONPATH=$ROOT OMP_NUM_THREADS=1
for m in "$@"; do
  L=$DIR/logs/$m
  echo "=== $m $(date -u +%H:%M:%S)"
  KFORGE_DISABLE=1 NU_OUT=$NU/$m-eager.pt python3 model.py $m > $L-1-eager.log 2>&1; echo "eager rc $?"; grep '^NU' $L-1-eager.log
  rm -rf $NU/cache-$m
  t0=$(date +%s)
  KFORGE_CACHE_DIR=$NU/cache-$m kforge warmup --time-budget $BUDGET model.py $m > $L-2-warmup.log 2>&1; echo "warmup rc $? in $(( $(date +%s) - t0 )) s"
  tr '\r' '\n' < $L-2-warmup.log | grep -v ETA | grep -E 'inserted|chain|not tuned|no_faster|rror|WARN|refused|fail' | cut -c1-200 | head -30
  KFORGE_CACHE_DIR=$NU/cache-$m NU_OUT=$NU/$m-served.pt python3 -c "import kernel_forge, runpy, sys; sys.argv=['model.py','$m']; runpy.run_path('model.py', run_name='__main__')" > $L-3-served.log 2>&1; echo "served rc $?"
  grep -E '^NU|WARN|rror|arning' $L-3-served.log | head -10
  KFORGE_DISABLE=1 NU_OUT=$NU/$m-eager2.pt python3 model.py $m > $L-4-eager2.log 2>&1; echo "eager2 rc $?"; grep '^NU' $L-4-eager2.log
  python3 -c "
import torch; a=torch.load('$NU/$m-eager.pt'); b=torch.load('$NU/$m-served.pt'); c=torch.load('$NU/$m-eager2.pt')
d=(a-b).abs().max().item(); s=a.abs().max().item()
print('$m served-vs-eager max abs diff', d, 'scale', s, 'rel', d/s, '| eager2-vs-eager', (a-c).abs().max().item())"
done
