"""Where a served chain's cost goes in a model: one process, a timm classifier built as
benchmarks/heldout/_vision.py builds it, three arms in turn (every kernel; chain kernels off:
kernel_forge.disable_chains(); nothing served: kernel_forge.disable()), 8 rounds of 10 forwards
each under inference_mode: each arm's median wall ms per forward (CUDA events), then one
torch.profiler pass per arm: kernel time and launches per forward, and the kernels whose time
differs most between the first two arms.
    KFORGE_CACHE_DIR=... python3 arms.py nf_resnet26 cnn|vit"""
import statistics
import sys

import torch

import kernel_forge as kf
import timm
from torch.profiler import ProfilerActivity, profile

name, cnn = sys.argv[1], sys.argv[2] == "cnn"
dt = torch.float16 if cnn else torch.bfloat16
m = timm.create_model(name, pretrained=False).eval().to("cuda", dt)
x = torch.randn(64, 3, 224, 224).to("cuda", dt)
if cnn:
    m = m.to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
ARMS = {"all": (kf.enable, kf.enable_chains), "chains off": (kf.enable, kf.disable_chains),
        "nothing": (kf.disable, kf.enable_chains)}


def arm(a):
    for f in ARMS[a]:
        f()


times = {a: [] for a in ARMS}
with torch.inference_mode():
    for a in ARMS:
        arm(a)
        for _ in range(5):
            m(x)
    torch.cuda.synchronize()
    for rnd in range(8):
        order = list(ARMS) if rnd % 2 == 0 else list(reversed(ARMS))
        for a in order:
            arm(a)
            m(x)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                m(x)
            e.record()
            e.synchronize()
            times[a].append(s.elapsed_time(e) / 10)
    per = {}
    for a in ARMS:
        arm(a)
        m(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                m(x)
            torch.cuda.synchronize()
        rows = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
        per[a] = {e.key: (e.self_device_time_total / 10, e.count / 10) for e in rows}
    kf.enable()
    kf.enable_chains()
for a in ARMS:
    k = per[a]
    print(f"{name} {a:10s}: wall {statistics.median(times[a]):.3f} ms per forward "
          f"(min {min(times[a]):.3f}); kernels {sum(v[0] for v in k.values()) / 1000:.3f} ms, "
          f"{sum(v[1] for v in k.values()):.0f} launches per forward")
keys = set(per["all"]) | set(per["chains off"])
diff = sorted(keys, key=lambda k: -abs(per["all"].get(k, (0, 0))[0] - per["chains off"].get(k, (0, 0))[0]))
print("kernels differing most, us per forward (calls): all | chains off")
for k in diff[:16]:
    a, b = per["all"].get(k, (0, 0)), per["chains off"].get(k, (0, 0))
    print(f"  {a[0]:8.1f} ({a[1]:4.0f}) | {b[0]:8.1f} ({b[1]:4.0f})  {k[:120]}")
for e in kf.chain_entries():
    print("entry", e.get("ops"), e.get("state"), e.get("reason", ""), {k: e.get(k) for k in
          ("heads", "completed", "dropped", "skipped", "observed", "kernel_us", "eager_us", "members_us")})
