"""Host time of a served chain against eager's calls, in one process, on a noisy host.

The loop is a transformer's block tail, `layer_norm(h + r)` twelve times (the `add ->
native_layer_norm` chain DeiT, ViT, BERT and Swin serve), on the shape and dtype given. Each step
runs the loop once with kernel_forge enabled and once disabled, in alternating order, each from an
idle device, and records the host time to issue it (and on CUDA the device time, events). Shared
machines change speed between processes and within one, so the two sides are interleaved call by
call and reported as quantiles (the minimum and 10th percentile are the least disturbed).

    # fill a cache: the script is its own model script
    KFORGE_CACHE_DIR=C kforge warmup --time-budget 30 benchmarks/chain_host_cost.py --device cuda
    KFORGE_CACHE_DIR=C python benchmarks/chain_host_cost.py --device cuda --measure 400
    python benchmarks/chain_host_cost.py --device cuda --measure 400 --no-plugin   (eager alone)

Options: --shape B,T,D (default 64,197,384: DeiT-Small's), --dtype f32|f16|bf16 (default bf16 on
CUDA, f32 on the CPU), --grad-mode inference|no_grad. --transposed keeps the residual stream
transposed as Whisper's encoder and MLP-Mixer do (`[B, D, T]` permuted to `[B, T, D]`):
`h = h + r; y = layer_norm(h)` per block, the sum stored with the stream's strides (cuda_chain's
tile walk). Each side also reports its device GB/s for the bytes the fused chain moves. Without
--measure it runs 40 forwards (the warm-up's recording). The last line is `HOST {json}`: per side the host and device microseconds
per chain run (quantiles), on - off, and what kernel_forge.chain_entries() says was served.
"""

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
BLOCKS = 12

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
p.add_argument("--dtype", choices=sorted(DTYPES))
p.add_argument("--shape", default="64,197,384")
p.add_argument("--grad-mode", choices=("inference", "no_grad"), default="inference")
p.add_argument("--transposed", action="store_true", help="a transposed residual stream")
p.add_argument("--measure", type=int, default=0, metavar="STEPS", help="steps of on and off each")
p.add_argument("--no-plugin", action="store_true", help="do not import kernel_forge (eager only)")
a = p.parse_args()
kf = None
if not a.no_plugin:
    import kernel_forge as kf

dev = torch.device(a.device)
dtype = DTYPES[a.dtype or ("bf16" if dev.type == "cuda" else "f32")]
shape = [int(s) for s in a.shape.split(",")]
d = shape[-1]
torch.manual_seed(0)
x = torch.randn(shape).to(dev, dtype)
if a.transposed:
    x = torch.randn(shape[0], d, *shape[1:-1]).to(dev, dtype).movedim(1, -1)
rs = [torch.randn(shape).to(dev, dtype) for _ in range(BLOCKS)]
ws = [torch.randn(d).to(dev, dtype) for _ in range(BLOCKS)]
bs = [torch.randn(d).to(dev, dtype) for _ in range(BLOCKS)]
cuda = dev.type == "cuda"
sync = torch.cuda.synchronize if cuda else (lambda: None)


def forward():
    h = x
    for i in range(BLOCKS):
        if a.transposed:
            h = h + rs[i]
            y = F.layer_norm(h, (d,), ws[i], bs[i])
        else:
            h = F.layer_norm(h + rs[i], (d,), ws[i], bs[i])
    return y if a.transposed else h


# what the fused chain moves per run: the two inputs read, the sum and the norm's output written
# (the transposed stream's sum is a chain output), the mean and rstd (f32 per row)
ELEMS = x.numel()
BYTES = ELEMS * x.element_size() * 4 + 8 * (ELEMS // d)


def once():
    """(host us, device us) of one forward from an idle device, per chain run."""
    sync()
    if cuda:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
    t0 = time.perf_counter()
    forward()
    host = time.perf_counter() - t0
    if cuda:
        e.record()
        e.synchronize()
        return 1e6 * host / BLOCKS, 1e3 * s.elapsed_time(e) / BLOCKS
    return 1e6 * host / BLOCKS, 1e6 * host / BLOCKS


def quant(v):
    v = sorted(v)
    return {"min": round(v[0], 2), "p10": round(v[len(v) // 10], 2),
            "median": round(statistics.median(v), 2)}


ctx = torch.no_grad if a.grad_mode == "no_grad" else torch.inference_mode
with ctx():
    if not a.measure:
        for _ in range(40):
            forward()
        sync()
        sys.exit(0)
    for _ in range(30):
        forward()
    sides = ("on", "off") if kf else ("eager",)
    got = {s: ([], []) for s in sides}
    for step in range(a.measure):
        for side in sides if step % 2 == 0 else sides[::-1]:
            if kf:
                (kf.enable if side == "on" else kf.disable)()
            h, g = once()
            got[side][0].append(h)
            got[side][1].append(g)
        if step and step % 100 == 0:
            print(f"[host-cost] step {step}/{a.measure}", file=sys.stderr, flush=True)
    if kf:
        kf.enable()
rec = {"device": str(dev), "gpu": torch.cuda.get_device_name(dev) if cuda else None,
       "dtype": str(dtype).replace("torch.", ""), "shape": shape, "grad_mode": a.grad_mode,
       "steps": a.measure, "transposed": a.transposed, "bytes": BYTES, "torch": torch.__version__}
for side, (h, g) in got.items():
    rec[side] = {"host_us": quant(h), "device_us": quant(g)}
    rec[side]["device_gbps"] = round(BYTES / rec[side]["device_us"]["min"] / 1e3, 1)
if kf:
    rec["on_minus_off_host_us"] = {q: round(rec["on"]["host_us"][q] - rec["off"]["host_us"][q], 2)
                                   for q in ("min", "p10", "median")}
    rec["chains"] = [{k: e.get(k) for k in ("ops", "state", "completed", "heads")}
                     for e in kf.chain_entries()]
for side in sides:
    q = rec[side]
    print(f"{side:5s} host us per chain run {q['host_us']}, device {q['device_us']} "
          f"({q['device_gbps']} GB/s at its min)")
print("HOST " + json.dumps(rec))
