# Session 35, call H: the layer-norm chain kernels alone (benchmarks/chain_host_cost.py), device
# time and GB/s of the fused chain against eager in one process: the transposed stream at
# Whisper-base's encoder shape and at MLP-Mixer-B/16's (cuda_chain's tile walk), and the row walk
# at DeiT-Small's for reference. Each: `kforge warmup` with defaults, then 300 interleaved steps.
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session35/callH.sh .snap/
#   run(carry=[".snap"], command="cd .snap && bash callH.sh")
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
T0=${T0:-$(date +%s)}
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
[ "${SKIP_BUILD:-0}" = 1 ] || bash scripts/device-build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(($(date +%s) - T0)) s"
one() {  # $1 name, the rest: chain_host_cost.py options
  local name=$1
  shift
  export KFORGE_CACHE_DIR=/tmp/hc-$name
  rm -rf "$KFORGE_CACHE_DIR"
  timeout 90 python3 -m kernel_forge.cli warmup --time-budget ${BUDGET:-40} ${NOCHECK:+--no-check} benchmarks/chain_host_cost.py "$@" \
    > "$OUT/$name-warmup.log" 2>&1
  sed -n '/^op  /,/^$/p' "$OUT/$name-warmup.log" | cut -c1-200
  timeout 60 python3 benchmarks/chain_host_cost.py "$@" --measure 300 > "$OUT/$name.log" 2>&1
  grep -v "^HOST\|step" "$OUT/$name.log" | tail -4
  grep "^HOST" "$OUT/$name.log" | python3 -c "import json,sys; r=json.loads(sys.stdin.read()[5:]); print(r['chains'])"
  echo "== $name done at $(($(date +%s) - T0)) s"
}
one whisper --transposed --shape 16,1500,512
one mixer --transposed --shape 64,196,768
one deit --shape 64,197,384
