"""The forge on the H200: tune each shape of shared/baselines with the builtin proposer.

    python benchmarks/forge_gpu.py [--iterations 50] [--only 0,3,5] [--out DIR]

For every op/shape of the baseline table (shared/baselines/README.md): kernel_forge.tune runs the
MCTS in the worker process (NVRTC candidates, verified against eager on the example and random
inputs), then, when a kernel was inserted, this process measures eager and the served call side
by side (CUDA events, L2 flushed, median). Reports best kernel time, speedup over eager (worker's
and in-process), over torch.compile (the baseline's measurement on the same GPU model, not
re-measured here: compiling each op costs more device time than the whole search), % of
measured copy bandwidth, and the search's wall time. Writes forge_gpu.json and forge_gpu.md.
"""

import argparse
import json
import os
import sys
import time

import torch

import kernel_forge as kf
from kernel_forge import _jobs

HERE = os.path.dirname(os.path.abspath(__file__))
# shared/baselines' table, copied here because the device gets the repository only
BASELINES = os.path.join(HERE, "baselines", "h200-ops-eager-vs-compile.json")


def mk(*s, dt=torch.bfloat16):
    return torch.randn(*s, device="cuda", dtype=dt)


def cases():
    """(name as in the baseline table, op, args, kwargs, bytes moved)"""
    bf, f32, f16 = torch.bfloat16, torch.float32, torch.float16
    out = []
    a = mk(8, 16, 1024, 1024)
    out.append(("softmax attn [8,16,1024,1024] bf16 dim=-1", "aten::_softmax", (a, -1, False), {}, 4 * a.numel()))
    a = mk(32, 262144, dt=f32)
    out.append(("softmax logits [32,262144] fp32", "aten::_softmax", (a, -1, False), {}, 8 * a.numel()))
    a = mk(4096, 151936)
    out.append(("softmax logits [4096,151936] bf16", "aten::_softmax", (a, -1, False), {}, 4 * a.numel()))
    a, w, b = mk(8192, 4096), mk(4096), mk(4096)
    out.append(("layer_norm [8192,4096] bf16", "aten::native_layer_norm", (a, [4096], w, b, 1e-5), {},
                4 * a.numel()))
    out.append(("rms_norm [8192,4096] bf16", "aten::_fused_rms_norm", (a, [4096], w, None), {},
                4 * a.numel()))
    a, w, b = mk(4, 512, 128, 128), mk(512), mk(512)
    out.append(("group_norm [4,512,128,128] 32g bf16", "aten::native_group_norm",
                (a, w, b, 4, 512, 128 * 128, 32, 1e-5), {}, 4 * a.numel()))
    a, w, b = mk(4, 512, 128, 128, dt=f32), mk(512, dt=f32), mk(512, dt=f32)
    out.append(("group_norm [4,512,128,128] 32g fp32", "aten::native_group_norm",
                (a, w, b, 4, 512, 128 * 128, 32, 1e-5), {}, 8 * a.numel()))
    a = mk(8192, 14336)
    out.append(("gelu tanh [8192,14336] bf16", "aten::gelu", (a,), {"approximate": "tanh"}, 4 * a.numel()))
    g = mk(8192, 14336)
    out.append(("silu(g) [8192,14336] bf16 (1st of silu(g)*u)", "aten::silu", (g,), {}, 4 * g.numel()))
    out.append(("mul [8192,14336] bf16 (2nd of silu(g)*u)", "aten::mul.Tensor", (g, a), {}, 6 * g.numel()))
    a = mk(64, 256, 56, 56, dt=f16).to(memory_format=torch.channels_last)
    out.append(("relu [64,256,56,56] fp16 CL", "aten::relu", (a,), {}, 4 * a.numel()))
    w, b = mk(256, dt=f16), mk(256, dt=f16)
    rm, rv = mk(256, dt=f16), mk(256, dt=f16).abs() + 0.5
    out.append(("batch_norm eval [64,256,56,56] fp16 CL", "aten::native_batch_norm",
                (a, w, b, rm, rv, False, 0.1, 1e-5), {}, 4 * a.numel()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--only", default="", help="comma list of case indices")
    ap.add_argument("--random-inputs", type=int, default=2)
    ap.add_argument("--time-budget", type=float, default=0, help="seconds of search per shape")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    base = {}
    if os.path.exists(BASELINES):
        with open(BASELINES) as f:
            for name, e_ms, c_ms, _gbs, _frac in json.load(f)["rows"]:
                base[name] = (e_ms * 1e3, c_ms * 1e3)
    bw = _jobs.copy_bandwidth_gbs(torch.device("cuda"), 0)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, copy bandwidth {bw:.0f} GB/s",
          flush=True)
    only = {int(i) for i in args.only.split(",") if i}
    rows = []
    for i, (name, op, a, kw, nbytes) in enumerate(cases()):
        if only and i not in only:
            continue
        t0 = time.monotonic()
        try:
            r = kf.tune(op, a, iterations=args.iterations, kwargs=kw,
                        random_inputs=args.random_inputs, time_budget=args.time_budget or None,
                        progress=False)
        except Exception as e:
            print(f"[{i}] {name}: FAILED {e}", flush=True)
            rows.append({"case": name, "op": op, "status": f"failed: {e}"})
            continue
        wall = time.monotonic() - t0
        roof_us = nbytes / (bw * 1e3)
        b_e, b_c = base.get(name.split(" (")[0], (None, None))
        row = {"case": name, "op": op, "status": r["status"], "eager_us": r["eager_ms"] * 1e3,
               "best_us": r["best_ms"] * 1e3 if r["best_ms"] else None, "speedup": r["speedup"],
               "iterations": r["iterations"], "search_wall_s": r["wall_s"], "tune_wall_s": wall,
               "roofline_us": roof_us, "node_counts": r["node_counts"], "job_dir": r["job_dir"],
               "baseline_eager_us": b_e, "baseline_compile_us": b_c,
               "served_us": r.get("served_ms", 0) * 1e3 or None,
               "eager_call_us": r.get("eager_call_ms", 0) * 1e3 or None}
        if row["best_us"]:
            row["pct_copy_bw"] = 100 * roof_us / row["best_us"]
            row["eager_pct_copy_bw"] = 100 * roof_us / row["eager_us"]
            if b_c:
                row["vs_compile"] = b_c / row["best_us"]
        rows.append(row)
        print(f"[{i}] {name}: {r['status']} eager {row['eager_us']:.1f} us best "
              f"{row['best_us'] or float('nan'):.1f} us ({(r['speedup'] or 0):.2f}x, "
              f"{row.get('pct_copy_bw', 0):.0f}% of copy bw) served {row['served_us']} us vs eager "
              f"{row['eager_call_us']} us in-process; search {r['wall_s']:.0f} s "
              f"{r['node_counts']}", flush=True)
        write(rows, args.out)  # after every case: a time limit must not lose the finished ones
    print("\n".join(write(rows, args.out)))
    return 0


def write(rows, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "forge_gpu.json"), "w") as f:
        json.dump(rows, f, indent=1)
    md = ["| op (shape, dtype) | eager us | best us | speedup | vs compile | % copy BW (eager) | "
          "search s | status |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "eager_us" not in r:
            md.append(f"| {r['case']} | - | - | - | - | - | - | {r['status']} |")
            continue
        f = lambda v, fmt: fmt.format(v) if v else "-"  # noqa: E731
        md.append(f"| {r['case']} | {r['eager_us']:.1f} | {f(r['best_us'], '{:.1f}')} | "
                  f"{f(r['speedup'], '{:.2f}x')} | {f(r.get('vs_compile'), '{:.2f}x')} | "
                  f"{f(r.get('pct_copy_bw'), '{:.0f}%')} ({f(r.get('eager_pct_copy_bw'), '{:.0f}%')}) | "
                  f"{r['search_wall_s']:.0f} | {r['status']} |")
    with open(os.path.join(out, "forge_gpu.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return md


if __name__ == "__main__":
    sys.exit(main())
