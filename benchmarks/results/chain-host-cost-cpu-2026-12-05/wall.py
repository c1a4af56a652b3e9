# wall time per chain run, plugin on vs switched off, alternating blocks in one process
import os, time, statistics, torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(2, 17, 384)
rs = [torch.randn(2, 17, 384) for _ in range(12)]
ws = [torch.randn(384) for _ in range(12)]
bs = [torch.randn(384) for _ in range(12)]
def fwd():
    h = x
    for i in range(12):
        h = F.layer_norm(h + rs[i], (384,), ws[i], bs[i])
    return h
import kernel_forge as kf
ctx = torch.no_grad() if os.environ.get("CMB_GRAD") == "no_grad" else torch.inference_mode()
res = {"on": [], "off": []}
with ctx:
    for _ in range(30): fwd()
    for blk in range(20):
        for mode in ("on", "off") if blk % 2 == 0 else ("off", "on"):
            (kf.enable if mode == "on" else kf.disable)()
            t0 = time.perf_counter_ns()
            for _ in range(200): fwd()
            res[mode].append((time.perf_counter_ns() - t0) / 200 / 12 / 1000)
    kf.enable()
on, off = statistics.median(res["on"]), statistics.median(res["off"])
print(f"{os.environ.get('CMB_GRAD') or 'inference'}: us per add->layer_norm, on {on:.2f}, off {off:.2f}, off/on {off/on:.3f}")
