"""The host cost of the model check's module hooks on a host-bound forward: a timm model on the
CPU with a small input, its forwards timed with no hooks, with OutermostForwards' global hooks,
and with them narrowed onto the model (kernel_forge/_forwards.py), in turn.
    python3 hookcost.py pvt_v2_b0"""
import statistics
import sys
import time

import torch

import timm
from kernel_forge._forwards import OutermostForwards

torch.set_num_threads(1)
m = timm.create_model(sys.argv[1], pretrained=False).eval()
x = torch.randn(1, 3, 64, 64)
calls = []
h = [mod.register_forward_pre_hook(lambda *a: calls.append(1)) for mod in m.modules()]
with torch.inference_mode():
    m(x)
for k in h:
    k.remove()
print(f"{sys.argv[1]}: {len(calls)} module calls a forward")
times = {"no hooks": [], "global hooks": [], "narrowed": []}
with torch.inference_mode():
    for _ in range(5):
        m(x)
    for rnd in range(12):
        for mode in times:
            f = None
            if mode != "no hooks":
                f = OutermostForwards(narrow_after=1 if mode == "narrowed" else 0)
                f.install()
                m(x)  # narrowed after this one
            ts = []
            for _ in range(10):
                t0 = time.perf_counter()
                m(x)
                ts.append(time.perf_counter() - t0)
            if f:
                f.remove()
            times[mode].append(1e3 * min(ts))
for mode, ts in times.items():
    print(f"  {mode:12s}: {statistics.median(ts):.3f} ms a forward (best of 10, median of 12 rounds)")
