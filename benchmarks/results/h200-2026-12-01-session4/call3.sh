#!/usr/bin/env bash
export PYTHONUNBUFFERED=1
T0=$(date +%s)
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "== $(( $(date +%s) - T0 )) s built"
timeout 60 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_guard.py > $OUT/chain-guard-gpu.log 2>&1
tail -4 $OUT/chain-guard-gpu.log
echo "== $(( $(date +%s) - T0 )) s chain guard"
SKIP_BUILD=1 MODELS=bert_base LIMIT=$(( 585 - ($(date +%s) - T0) )) bash benchmarks/online_h200.sh 2>&1 | tail -30
