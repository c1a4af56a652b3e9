"""The forge on CPU (host C templates) against torch's eager CPU kernels.

    python benchmarks/forge_cpu.py [--iterations 30] [--out FILE.md]

kernel_forge.tune on each shape: the worker's median kernel time against eager's (both measured
as the worker and the job writer measure them: 20 runs each timed alone). When a kernel is
inserted, this process also times the call through the plugin (served, with the dispatch and the
output allocation) next to the eager call: that pair is what a model sees. Where no template wins,
the guard keeps eager. Timings on a shared 2-core machine are noisy: read ratios, not digits.
"""

import argparse
import sys

import torch
import torch.nn.functional as F  # noqa: F401

import kernel_forge as kf


def cases():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    x = r(256, 1024)
    return [
        ("softmax f32 [384,1536]", "aten::_softmax", (r(384, 1536), -1, False), {}),
        ("softmax f32 [64,333]", "aten::_softmax", (r(64, 333), -1, False), {}),
        ("log_softmax f32 [64,333]", "aten::_log_softmax", (r(64, 333), -1, False), {}),
        ("layer_norm f32 [256,1024] w+b", "aten::native_layer_norm",
         (x, [1024], r(1024), r(1024), 1e-5), {}),
        ("gelu tanh f32 [512,1031]", "aten::gelu", (r(512, 1031),), {"approximate": "tanh"}),
        ("gelu erf f32 [512,1031]", "aten::gelu", (r(512, 1031),), {}),
        ("silu f32 [512,1031]", "aten::silu", (r(512, 1031),), {}),
        ("relu f32 [512,1031]", "aten::relu", (r(512, 1031),), {}),
        ("add f32 [512,1031]", "aten::add.Tensor", (r(512, 1031), r(512, 1031)), {}),
        ("mul f32 [512,1031]", "aten::mul.Tensor", (r(512, 1031), r(512, 1031)), {}),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--out")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{args.iterations} iterations per signature", flush=True)
    lines = ["| op (shape) | eager us | best kernel us | speedup | served call us | eager call us "
             "| status | search s |", "|---|---|---|---|---|---|---|---|"]
    for name, op, a, kw in cases():
        r = kf.tune(op, a, iterations=args.iterations, kwargs=kw)
        f = lambda v, fmt: fmt.format(v) if v else "-"  # noqa: E731
        lines.append(
            f"| {name} | {r['eager_ms'] * 1e3:.1f} | {f(r['best_ms'] and r['best_ms'] * 1e3, '{:.1f}')} "
            f"| {f(r['speedup'], '{:.2f}x')} | {f(r.get('served_ms') and r['served_ms'] * 1e3, '{:.1f}')} "
            f"| {f(r.get('eager_call_ms') and r['eager_call_ms'] * 1e3, '{:.1f}')} | {r['status']} "
            f"| {r['wall_s']:.1f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
