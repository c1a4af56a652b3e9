"""GPT-2 small bf16 [8,512] forwards: host ms per forward, then a CPU profile of 3 forwards."""
import os, statistics, sys, time
plugin = "--plugin" in sys.argv
if plugin:
    import kernel_forge
import torch
from transformers import GPT2Config, GPT2Model
torch.manual_seed(0)
config = GPT2Config()
model = GPT2Model(config).eval().to("cuda", torch.bfloat16)
ids = torch.randint(0, config.vocab_size, (8, 512), generator=torch.Generator().manual_seed(1)).cuda()
f = lambda: model(input_ids=ids, use_cache=False).last_hidden_state
tag = os.environ.get("TAG", "plugin" if plugin else "eager")
with torch.inference_mode():
    for _ in range(5): f()
    torch.cuda.synchronize()
    host, tot = [], []
    for _ in range(20):
        torch.cuda.synchronize(); t0 = time.perf_counter(); f(); t1 = time.perf_counter()
        torch.cuda.synchronize(); t2 = time.perf_counter()
        host.append(1e3 * (t1 - t0)); tot.append(1e3 * (t2 - t0))
    print(f"{tag}: host {statistics.median(host):.3f} ms, total {statistics.median(tot):.3f} ms per forward", flush=True)
    if "--profile" in sys.argv:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(3): f()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
if plugin and "--stats" in sys.argv:
    for r in kernel_forge.stats():
        if r["calls"] and (r["served"] or r["has_kernel"]):
            print("stat", r["signature"][:90], r["calls"], r["served"], r["fallback"], r["eager_us"], r["served_us"])
    for c in kernel_forge.chain_entries():
        print("chain", {k: c.get(k) for k in ("ops", "state", "heads", "completed", "dropped", "skipped", "kernel_us", "eager_us")})
