"""Where a workload's device time goes, by ATen op: what the plugin intercepts and what not.

    python benchmarks/e2e/op_times.py MODEL [--iters N] [--top K] [--device cuda|cpu] [--tiny]

Runs the eager forward (without the plugin) under torch.profiler and prints each op's self device
time per forward (the kernels it launched itself, not its children's), its share of the total, and
whether the plugin's default intercept list holds it. Ops not intercepted that hold a large share
are the candidates for new intercepts and templates.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import harness  # noqa: E402


def default_ops() -> set[str]:
    """The plugin's default intercept list by op name without overload (as the profiler names
    ops), read from its source: loading the plugin would intercept the profiled forward."""
    path = os.path.join(harness.ROOT, "plugin", "oplist.c")
    with open(path) as f:
        return {line.split('"')[1].split(".")[0] for line in f
                if line.strip().startswith('"aten::')}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_workload_args(p)
    p.add_argument("--iters", type=int, default=5, help="profiled forwards (default 5)")
    p.add_argument("--top", type=int, default=40, help="rows to print (default 40)")
    a = p.parse_args()
    s = harness.Setup(a)
    for _ in range(3):  # cuDNN/cuBLAS choices and allocator warm before the profile
        s.forward()
    s.sync()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if s.device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(a.iters):
            s.forward()
        s.sync()
    cuda = s.device.type == "cuda"
    rows = []
    for e in prof.key_averages():
        t = e.self_device_time_total if cuda else e.self_cpu_time_total
        if t > 0 and e.key.startswith("aten::"):
            rows.append((t / a.iters, e.count / a.iters, e.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows) or 1.0
    ops = default_ops()
    unit = "device" if cuda else "host self"
    print(f"{a.model} ({s.dtype_name}, {a.device}): {total / 1e3:.3f} ms {unit} time per forward "
          f"in ATen ops, {a.iters} forwards profiled")
    print("| op | intercepted | calls/fwd | us/fwd | share |\n|---|---|---|---|---|")
    for us, calls, name in rows[:a.top]:
        mark = "yes" if name in ops else "no"
        print(f"| {name} | {mark} | {calls:.0f} | {us:.1f} | {100 * us / total:.1f}% |")
    rest = sum(r[0] for r in rows if r[2] not in ops)
    print(f"not intercepted: {rest / 1e3:.3f} ms ({100 * rest / total:.1f}%)")


if __name__ == "__main__":
    main()
