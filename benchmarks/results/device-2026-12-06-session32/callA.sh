# Session 32, call A: Qwen 3.5 and Gemma 4 prefill end to end (eager, plugin after kforge warmup
# with the warm-up's defaults: every hot signature, 50 iterations, two passes under the time
# budget; torch.compile) in one process each.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session32/callA.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callA.sh")
set -u
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
MODELS='qwen3_5-prefill gemma4-prefill' BUDGET_S=${BUDGET_S:-560} \
  E2E_ARGS='--max-jobs 0 --iterations 50 --no-cold-start' bash benchmarks/e2e/device_e2e.sh
