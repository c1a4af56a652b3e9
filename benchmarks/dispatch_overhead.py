"""Extra time per call of intercept + signature + guard + fallback, on tiny CPU tensors.

Runs the same loop in child processes with no plugin (KFORGE_DISABLE=1: nothing registered),
with the plugin loaded and enabled, the same without timing samples (KFORGE_SAMPLE_EVERY huge),
with the plugin loaded but switched off (kernel_forge.disable(): the boxed pass-through only),
and with hand-written host kernels for these exact signatures in the cache (every call served:
the cost of the served path, output allocation and kernel call included), alternating them
several times so machine noise hits them alike, and reports medians and differences per call.

    python benchmarks/dispatch_overhead.py [--calls 20000] [--rounds 5]

With --shapes N it measures instead the cost of a call when every shape is new (a decode loop
with a growing KV cache): N distinct (4,) views, each called twice, per window of 10,000, with
the plugin on and with it disabled; flat windows mean the signature table stays bounded.

    python benchmarks/dispatch_overhead.py --shapes 100000
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time, torch
mode = sys.argv[1]; calls = int(sys.argv[2])
torch.set_num_threads(1)
if mode != "none":  # "on", "on-unsampled", "off", "served"
    import kernel_forge as kf
    if mode == "off":
        kf.disable()
x = torch.randn(8); y = torch.randn(8); m = torch.randn(4, 8)
cases = {
    "relu(f32[8])": lambda: torch.relu(x),
    "add(f32[8], f32[8])": lambda: torch.add(x, y),
    "mul(f32[8], 2.0)": lambda: x * 2.0,
    "softmax(f32[4,8])": lambda: torch.softmax(m, -1),
}
out = {}
for name, fn in cases.items():
    for _ in range(2000):
        fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    out[name] = best
if mode == "served":  # every case must really have been served
    served = {r["signature"]: r["served"] for r in kf.stats()}
    assert sum(v > 0 for v in served.values()) >= len(cases), served
print(json.dumps(out))
"""

SHAPES = r"""
import json, sys, time, torch
mode, n, w = sys.argv[1], int(sys.argv[2]), 10000
torch.set_num_threads(1)
if mode == "on":
    import kernel_forge as kf
buf = torch.randn(4 * n + 8)
windows = []
for start in range(0, n, w):
    views = [buf.as_strided((4,), (start + j + 1,)) for j in range(min(w, n - start))]
    t0 = time.perf_counter_ns()
    for v in views:  # a new shape, then the same shape again
        torch.relu(v)
        torch.relu(v)
    windows.append((time.perf_counter_ns() - t0) / (2 * len(views)))
out = {"windows_ns": windows}
if mode == "on":
    out["table"] = kf.signature_table()
print(json.dumps(out))
"""


def shapes(n):
    """Per-call ns by window of 10,000 new shapes, plugin on vs KFORGE_DISABLE=1."""
    res = {}
    for mode in ("off", "on"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
        if mode == "off":
            env["KFORGE_DISABLE"] = "1"
        r = subprocess.run([sys.executable, "-c", SHAPES, mode, str(n)], env=env,
                           capture_output=True, text=True, check=True)
        res[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"ns per call by window of 10,000 new shapes (each called twice), {n} shapes, CPU")
    print(f"{'window':>8} {'disabled':>10} {'plugin on':>10}")
    for i, (off, on) in enumerate(zip(res["off"]["windows_ns"], res["on"]["windows_ns"])):
        print(f"{i:8} {off:10.0f} {on:10.0f}")
    t = res["on"]["table"]
    print(f"table: {t['occupied']}/{t['capacity']} slots, {t['evicted']['host']['rows']} "
          f"signatures evicted, {t['dropped']} calls dropped")
    return res


# Host kernels for the exact signatures above (f32, contiguous), for the "served" mode.
KERNELS = [
    ("aten::relu", "x", "void k(const float *x, float *y) { for (int i = 0; i < 8; i++) y[i] = x[i] > 0.f ? x[i] : 0.f; }",
     ["const float*", "float*"]),
    ("aten::add.Tensor", "xy", "void k(const float *x, const float *y, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] + y[i]; }",
     ["const float*", "const float*", "float*"]),
    ("aten::mul.Tensor", "x2", "void k(const float *x, const double *s, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] * (float)s[0]; }",
     ["const float*", "const double*", "float*"]),
    ("aten::_softmax", "m", "#include <math.h>\nvoid k(const float *x, float *y) { for (int r = 0; r < 4; r++) { const float *a = x + 8 * r; float *b = y + 8 * r;"
     " float m = -INFINITY, s = 0.f; for (int c = 0; c < 8; c++) m = a[c] > m ? a[c] : m;"
     " for (int c = 0; c < 8; c++) { b[c] = expf(a[c] - m); s += b[c]; } for (int c = 0; c < 8; c++) b[c] /= s; } }",
     ["const float*", "float*"]),
]

SETUP = r"""
import json, sys, torch, kernel_forge as kf
kernels = json.loads(sys.argv[1])
x = torch.randn(8); y = torch.randn(8); m = torch.randn(4, 8)
args = {"x": (x,), "xy": (x, y), "x2": (x, 2.0), "m": (m, -1, False)}
for op, which, src, types in kernels:
    # (x, 2.0): the Python number becomes a wrapped 0-dim f64 tensor, as in x * 2.0
    kf.add_kernel(op, args[which], src, {"entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
                                         "smem": 0, "args": types},
                  allow_slower=True)  # the served path's overhead is measured, win or lose
print("ok")
"""


CACHE = os.path.join(tempfile.gettempdir(), f"kforge-overhead-cache-{os.getpid()}")


def setup_cache():
    """Verify and cache the host kernels once (add_kernel), for the "served" mode."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    env["KFORGE_CACHE_DIR"] = CACHE
    subprocess.run([sys.executable, "-c", SETUP, json.dumps(KERNELS)], env=env, check=True,
                   capture_output=True, text=True)


def run(mode, calls):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    if mode == "none":
        env["KFORGE_DISABLE"] = "1"
    if mode == "on-unsampled":  # no timing samples after the first 3 calls
        env["KFORGE_SAMPLE_EVERY"] = str(1 << 20)
    if mode == "served":
        env["KFORGE_CACHE_DIR"] = CACHE
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(calls)], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", help="write the raw numbers here")
    p.add_argument("--shapes", type=int, help="measure N new shapes instead (see above)")
    args = p.parse_args()
    if args.shapes:
        res = shapes(args.shapes)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    modes = ["none", "on", "off", "on-unsampled", "served"]
    setup_cache()
    samples = {m: [] for m in modes}
    for _ in range(args.rounds):
        for m in modes:
            samples[m].append(run(m, args.calls))
    cases = list(samples["none"][0])
    med = {m: {c: statistics.median(s[c] for s in samples[m]) for c in cases} for m in modes}
    print(f"ns per call, median of {args.rounds} rounds x best of 5 x {args.calls} calls, "
          "1 thread, CPU")
    print(f"{'op':24} {'no plugin':>10} {'plugin on':>10} {'unsampled':>10} {'switched off':>13} "
          f"{'extra (on)':>11} {'ratio':>6} {'served':>8} {'served-none':>12}")
    for c in cases:
        n, on, off, uns = med["none"][c], med["on"][c], med["off"][c], med["on-unsampled"][c]
        sv = med["served"][c]
        print(f"{c:24} {n:10.0f} {on:10.0f} {uns:10.0f} {off:13.0f} {on - n:+11.0f} {on / n:6.2f} "
              f"{sv:8.0f} {sv - n:+12.0f}")
    shutil.rmtree(CACHE, ignore_errors=True)
    print("per round (" + " / ".join(modes) + "):")
    for c in cases:
        print(f"  {c:24} " + "  ".join("/".join(f"{samples[m][i][c]:.0f}" for m in modes)
                                       for i in range(args.rounds)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"median_ns": med, "rounds": args.rounds, "calls": args.calls}, f, indent=1)


if __name__ == "__main__":
    main()
