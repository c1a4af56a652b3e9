"""The plugin's host cost per forward on a host-bound model: a timm model with a small input, N
forwards timed by the wall clock, in one of three processes: no plugin, the plugin loaded
(KFORGE_CACHE_DIR as set; nothing served from an empty one), the plugin loaded and disabled.
Prints the median ms per forward and the intercepted calls per forward. The model stays in f32
(timm's default), so a cache warmed on the bf16 held-out script serves none of it: what this
measures is the plugin's interception alone.
    python3 hostcost.py pvt_v2_b0 none|plugin|disabled [device] [batch] [size]"""
import statistics
import sys
import time

import torch

name, mode = sys.argv[1], sys.argv[2]
dev = sys.argv[3] if len(sys.argv) > 3 else "cpu"
batch = int(sys.argv[4]) if len(sys.argv) > 4 else 1
size = int(sys.argv[5]) if len(sys.argv) > 5 else 64
if mode != "none":
    import kernel_forge as kf
    if mode == "disabled":
        kf.disable()
import timm

torch.set_num_threads(1)
m = timm.create_model(name, pretrained=False).eval().to(dev)
x = torch.randn(batch, 3, size, size, device=dev)


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


with torch.inference_mode():
    for _ in range(10):
        m(x)
    sync()
    if mode != "none":
        kf.reset_stats()
    ts = []
    for _ in range(60):
        t0 = time.perf_counter()
        m(x)
        sync()
        ts.append((time.perf_counter() - t0) * 1e3)
calls = sum(r["calls"] for r in kf.stats()) / 60 if mode != "none" else 0
print(f"{name} {mode}: {statistics.median(ts):.3f} ms per forward (min {min(ts):.3f}), "
      f"{calls:.0f} intercepted calls per forward")
