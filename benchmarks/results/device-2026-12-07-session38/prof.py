"""GPU kernel time per forward of a timm classifier built as benchmarks/heldout/_vision.py builds it,
eager, with the plugin (KFORGE_CACHE_DIR's kernels) or under torch.compile: torch.profiler's
CUDA activity over 10 forwards, the top kernels by total time.
    python3 prof.py mixer_b16_224 eager|plugin|compile [cnn]"""
import sys
import torch

name, mode = sys.argv[1], sys.argv[2]
cnn = len(sys.argv) > 3
if mode == "plugin":
    import kernel_forge  # noqa: F401
import timm
from torch.profiler import ProfilerActivity, profile

dt = torch.float16 if cnn else torch.bfloat16
m = timm.create_model(name, pretrained=False).eval().to("cuda", dt)
x = torch.randn(64, 3, 224, 224).to("cuda", dt)
if cnn:
    m = m.to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
if mode == "compile":
    m = torch.compile(m)
with torch.inference_mode():
    for _ in range(8):
        m(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            m(x)
        torch.cuda.synchronize()
rows = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
rows.sort(key=lambda e: -e.self_device_time_total)
tot = sum(e.self_device_time_total for e in rows)
print(f"== {name} {mode}: {tot / 10 / 1000:.3f} ms of kernels per forward")
for e in rows[:28]:
    print(f"{e.self_device_time_total / 10:9.1f} us/fwd {e.count // 10:5d}/fwd  {e.key[:110]}")
