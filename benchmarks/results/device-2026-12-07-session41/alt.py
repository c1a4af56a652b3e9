"""Does switching arms at every forward, as the model check does, change what each arm measures?
One process, a timm classifier built as benchmarks/heldout/_vision.py builds it, under
inference_mode, the arms of the check (every kernel; chain kernels off; nothing served):
  blocks: per arm one untimed forward, then 10 timed (CUDA events around the 10), 4 rounds;
  every forward: the arm switched before each forward, each forward timed alone (CUDA events
  around it, as ForwardArms does), 16 rounds, every other round in reverse order (as the check).
Prints each arm's median ms per forward for both.
    KFORGE_CACHE_DIR=... python3 alt.py pvt_v2_b0 cnn|vit"""
import statistics
import sys

import torch

import kernel_forge as kf
import timm

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


def ev():
    return torch.cuda.Event(enable_timing=True)


with torch.inference_mode():
    for a in ARMS:
        arm(a)
        for _ in range(5):
            m(x)
    torch.cuda.synchronize()
    for phase in ("blocks", "every forward", "blocks"):
        t = {a: [] for a in ARMS}
        rounds = 4 if phase == "blocks" else 16
        for rnd in range(rounds):
            order = list(ARMS) if rnd % 2 == 0 else list(reversed(ARMS))
            for a in order:
                arm(a)
                if phase == "blocks":
                    m(x)
                    s, e = ev(), ev()
                    s.record()
                    for _ in range(10):
                        m(x)
                    e.record()
                    e.synchronize()
                    t[a].append(s.elapsed_time(e) / 10)
                else:
                    s, e = ev(), ev()
                    s.record()
                    m(x)
                    e.record()
                    e.synchronize()
                    t[a].append(s.elapsed_time(e))
        print(f"{name} {phase:13s}: " + ", ".join(
            f"{a} {statistics.median(v):.3f} ms (min {min(v):.3f})" for a, v in t.items()), flush=True)
