#!/usr/bin/env bash
# run from .snap after device-build.sh; writes to $OUT
cc -shared -fPIC -O1 -g -o /tmp/segv_trace.so scripts/segv_trace.c
python3 -c "import sys; sys.path.insert(0,'tests/python'); import test_hidden_writes as t; open('/tmp/fu.py','w').write(t.FIRST_USE)"
export PYTHONPATH=tests/python
for mode in default reload0 omp1; do
  rm -rf /tmp/fuc; export KFORGE_CACHE_DIR=/tmp/fuc
  extra=""
  [ $mode = reload0 ] && extra="KFORGE_RELOAD_MS=100000"
  [ $mode = omp1 ] && extra="OMP_NUM_THREADS=1"
  python3 /tmp/fu.py plant > /dev/null 2>&1 || echo "plant failed"
  env $extra KFORGE_LOG=debug LD_PRELOAD=/tmp/segv_trace.so timeout 60 python3 /tmp/fu.py train > /tmp/$mode.log 2>&1
  echo "== $mode rc=$?"
  grep -v "^\s*$" /tmp/$mode.log | grep -iv "sigtable\|kforge-debug-noise" | tail -60
  # resolve our frames
  grep -o "^[^ ]*kernel_forge[^(]*(+0x[0-9a-f]*)" /tmp/$mode.log | while read -r f; do
    mod=${f%%(*}; off=${f##*(+}; off=${off%)}
    echo "$f -> $(addr2line -f -C -i -e "$mod" "$off" | tr '\n' ' ')"
  done
done
