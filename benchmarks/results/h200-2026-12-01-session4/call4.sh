#!/usr/bin/env bash
export PYTHONUNBUFFERED=1
bash scripts/device-build.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
KFORGE_LOG=debug timeout 60 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_guard.py > $OUT/guard.log 2>&1
grep -E "AssertionError|assert|passed|failed" $OUT/guard.log | cut -c1-900 | tail -8
grep -i "chain\|sample\|slower" $OUT/guard.log | grep -v "^tests\|^E " | head -20 | cut -c1-300
timeout 90 python3 -m pytest -q -m gpu -rfEx tests/python/test_chain_serving.py tests/python/test_chain_jobs.py tests/python/test_chain_cache_link.py > $OUT/chains.log 2>&1
tail -4 $OUT/chains.log
