"""GPT-2 small bf16 [8,512]: the plugin enabled and disabled in turn in one process (warm cache),
host and synced ms per forward for each, so that process-to-process noise cancels."""
import statistics, time
import kernel_forge
import torch
from transformers import GPT2Config, GPT2Model
torch.manual_seed(0)
config = GPT2Config()
model = GPT2Model(config).eval().to("cuda", torch.bfloat16)
ids = torch.randint(0, config.vocab_size, (8, 512), generator=torch.Generator().manual_seed(1)).cuda()
f = lambda: model(input_ids=ids, use_cache=False).last_hidden_state
res = {True: ([], []), False: ([], [])}
with torch.inference_mode():
    for _ in range(5): f()
    for block in range(16):
        on = block % 2 == 0
        (kernel_forge.enable if on else kernel_forge.disable)()
        for i in range(8):
            torch.cuda.synchronize(); t0 = time.perf_counter(); f(); t1 = time.perf_counter()
            torch.cuda.synchronize(); t2 = time.perf_counter()
            if i >= 2:
                res[on][0].append(1e3 * (t1 - t0)); res[on][1].append(1e3 * (t2 - t0))
kernel_forge.enable()
for on in (False, True):
    h, t = res[on]
    print(f"{'enabled ' if on else 'disabled'}: host {statistics.median(h):.3f} ms, synced {statistics.median(t):.3f} ms per forward (n={len(h)})")
print("ratio disabled/enabled (synced):", round(statistics.median(res[False][1]) / statistics.median(res[True][1]), 3))
for c in kernel_forge.chain_entries():
    print("chain", {k: c.get(k) for k in ("ops", "state", "heads", "completed", "dropped", "skipped", "kernel_us", "eager_us")})
