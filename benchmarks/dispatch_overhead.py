"""Extra time per call of intercept + signature + guard + fallback, on tiny tensors.

Runs the same loop in child processes, alternating them several times so machine noise hits them
alike, and reports medians per call for five states of the plugin:

  no plugin      KFORGE_DISABLE=1 and the package not imported: nothing registered
  switched off   loaded, then kernel_forge.disable(): the boxed pass-through only
  pass-through   loaded and on, no kernel for the signature: intercept, describe, look up,
                 count, fall back to eager (timing samples as configured)
  unsampled      the same with KFORGE_SAMPLE_EVERY huge (no timing samples after the first calls)
  served         hand-written kernels for these exact signatures in the cache: every call served,
                 output allocation and the kernel call included ("-" where the signature cannot
                 be served, e.g. a wrapped Python scalar)

    python benchmarks/dispatch_overhead.py [--calls 20000] [--rounds 5] [--device cuda]

Progress goes to stderr as it happens (each process, each round); a first table is printed
after round 1. On cuda the kernels of the served mode are verified in the background while the
other modes run, and --calls defaults to 2000.

--baseline DIR runs every plugin state a second time with DIR first on PYTHONPATH (a copy of an
older kernel_forge package, its _kforge.so included) and prints new/old ratios taken in the same
run, which is what to compare on a shared, noisy machine.

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
import time

CHILD = r"""
import json, sys, time, torch
import torch.nn.functional as F
mode, calls, dev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(1)
if mode != "none":  # "on", "on-unsampled", "off", "served"
    import kernel_forge as kf
    if mode == "off":
        kf.disable()
x = torch.randn(8, device=dev); y = torch.randn(8, device=dev); m = torch.randn(4, 8, device=dev)
w = torch.randn(8, device=dev); z = torch.randn(8, device=dev); o = torch.empty(8, device=dev)
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
cases = {  # name: (call, the intercepted op it reaches)
    "add(f32[8], f32[8])": (lambda: torch.add(x, y), "aten::add.Tensor"),
    "mul(f32[8], 2.0)": (lambda: x * 2.0, "aten::mul.Tensor"),
    "relu(f32[8])": (lambda: torch.relu(x), "aten::relu"),
    "softmax(f32[4,8])": (lambda: torch.softmax(m, -1), "aten::_softmax"),
    "layer_norm(f32[4,8])": (lambda: F.layer_norm(m, (8,)), "aten::native_layer_norm"),
    # in-place, out= and a reduction (their own tensors: w grows, harmlessly)
    "add_(f32[8], f32[8])": (lambda: w.add_(y), "aten::add_.Tensor"),
    "relu_(f32[8])": (lambda: z.relu_(), "aten::relu_"),
    "mul(f32[8], f32[8], out=)": (lambda: torch.mul(x, y, out=o), "aten::mul.out"),
    "sum(f32[4,8], -1)": (lambda: m.sum(-1), "aten::sum.dim_IntList"),
}
out = {}
print(f"[{mode}] torch and the plugin loaded", file=sys.stderr, flush=True)
for name, (fn, _) in cases.items():
    for _ in range(min(2000, calls)):
        fn()
    sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    out[name] = best
    print(f"[{mode}] {name}: {best:.0f} ns", file=sys.stderr, flush=True)
res = {"ns": out}
if mode == "served":  # which cases really were served (all but eager samples)
    rows = kf.stats()
    res["served"] = {name: any(r["op"] == op and r["served"] > r["fallback"]
                               for r in rows) for name, (_, op) in cases.items()}
print(json.dumps(res))
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
        env["KFORGE_INTERCEPT"] = "all"
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


# Kernels for the exact signatures above (f32, contiguous), for the "served" mode: C for the host,
# CUDA C++ (NVRTC, one thread) for --device cuda. (op, args, host source, CUDA source, arg types)
_LN = ("for (int r = 0; r < 4; r++) { const float *a = x + 8 * r; float *b = y + 8 * r; float m = 0.f, v = 0.f;"
       " for (int c = 0; c < 8; c++) m += a[c]; m /= 8.f;"
       " for (int c = 0; c < 8; c++) v += (a[c] - m) * (a[c] - m); v /= 8.f;"
       " float rs = 1.f / sqrtf(v + 1e-5f); mean[r] = m; rstd[r] = rs;"
       " for (int c = 0; c < 8; c++) b[c] = (a[c] - m) * rs; }")
_SM = ("for (int r = 0; r < 4; r++) { const float *a = x + 8 * r; float *b = y + 8 * r;"
       " float m = -INFINITY, s = 0.f; for (int c = 0; c < 8; c++) m = a[c] > m ? a[c] : m;"
       " for (int c = 0; c < 8; c++) { b[c] = expf(a[c] - m); s += b[c]; } for (int c = 0; c < 8; c++) b[c] /= s; }")
KERNELS = [
    ("aten::relu", "x", "for (int i = 0; i < 8; i++) y[i] = x[i] > 0.f ? x[i] : 0.f;",
     "(const float *x, float *y)", ["const float*", "float*"]),
    ("aten::add.Tensor", "xy", "for (int i = 0; i < 8; i++) o[i] = x[i] + y[i];",
     "(const float *x, const float *y, float *o)", ["const float*", "const float*", "float*"]),
    # a wrapped Python scalar: refused by add_kernel while kernels cannot take one (then "-")
    ("aten::mul.Tensor", "x2", "for (int i = 0; i < 8; i++) o[i] = x[i] * (float)s[0];",
     "(const float *x, const double *s, float *o)", ["const float*", "const double*", "float*"]),
    ("aten::_softmax", "m", _SM, "(const float *x, float *y)", ["const float*", "float*"]),
    ("aten::native_layer_norm", "ln", _LN, "(const float *x, float *y, float *mean, float *rstd)",
     ["const float*", "float*", "float*", "float*"]),
    # in-place and out=: the written argument is the kernel's, no fresh output
    ("aten::add_.Tensor", "wy", "for (int i = 0; i < 8; i++) x[i] += y[i];",
     "(float *x, const float *y)", ["float*", "const float*"]),
    ("aten::relu_", "z", "for (int i = 0; i < 8; i++) x[i] = x[i] > 0.f ? x[i] : 0.f;",
     "(float *x)", ["float*"]),
    ("aten::mul.out", "xyo", "for (int i = 0; i < 8; i++) o[i] = x[i] * y[i];",
     "(const float *x, const float *y, float *o)", ["const float*", "const float*", "float*"]),
    ("aten::sum.dim_IntList", "msum",
     "for (int r = 0; r < 4; r++) { float s = 0.f; for (int c = 0; c < 8; c++) s += x[8 * r + c]; o[r] = s; }",
     "(const float *x, float *o)", ["const float*", "float*"]),
]

SETUP = r"""
import json, sys, torch, kernel_forge as kf
kernels, dev = json.loads(sys.argv[1]), sys.argv[2]
x = torch.randn(8, device=dev); y = torch.randn(8, device=dev); m = torch.randn(4, 8, device=dev)
w = torch.randn(8, device=dev); z = torch.randn(8, device=dev); o = torch.empty(8, device=dev)
args = {"x": (x,), "xy": (x, y), "x2": (x, 2.0), "m": (m, -1, False),
        "ln": (m, [8], None, None, 1e-5), "wy": (w, y), "z": (z,), "xyo": (x, y), "msum": (m, [-1])}
kwargs = {"xyo": {"out": o}}
def add(k):
    op, which, body, params, types = k
    # (x, 2.0): the Python number becomes a wrapped 0-dim f64 tensor, as in x * 2.0
    if dev == "cuda":
        src = ('extern "C" __global__ void k' + params + ' { if (threadIdx.x || blockIdx.x) return; '
               + body.replace("INFINITY", "__int_as_float(0x7f800000)") + ' }')
    else:
        src = "#include <math.h>\nvoid k" + params + " { " + body + " }"
    try:
        kf.add_kernel(op, args[which], src, {"entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
                                             "smem": 0, "args": types},
                      kwargs=kwargs.get(which), allow_slower=True)  # the served path's overhead is measured, win or lose
        return op
    except kf.KernelForgeError as e:
        print("not served:", e, file=sys.stderr, flush=True)
# on a GPU host each verification (its own process) mostly waits for CUDA start-up: in parallel
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(len(kernels) if dev == "cuda" else 1) as pool:
    done = [op for op in pool.map(add, kernels) if op]
print(json.dumps(done))
"""


def clean_env(pythonpath=None):
    # every op intercepted: the pass-through is what an op costs that is intercepted without a
    # kernel; by default (KFORGE_INTERCEPT=cached) an op with no kernel at all costs nothing
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    env["KFORGE_INTERCEPT"] = "all"
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    return env


CHILD_TIMEOUT_S = 300


def start_setup(cache, dev, pythonpath=None):
    """Verify and cache the kernels (add_kernel), for the "served" mode, in the background: on
    a GPU each add_kernel verifies in a child process of its own, which takes a while. The
    kernels are this file's own: no compute-sanitizer memcheck (KFORGE_COMPUTE_SANITIZER=0)."""
    env = clean_env(pythonpath)
    env["KFORGE_CACHE_DIR"] = cache
    env["KFORGE_COMPUTE_SANITIZER"] = "0"
    # `python -c` puts the working folder first on sys.path: a baseline runs elsewhere
    return subprocess.Popen([sys.executable, "-c", SETUP, json.dumps(KERNELS), dev], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(cache) if pythonpath else None)


def finish_setup(proc, what):
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        sys.exit(f"kernel setup ({what}) did not finish in {CHILD_TIMEOUT_S} s:\n{err[-3000:]}")
    if proc.returncode != 0:
        sys.exit(f"kernel setup ({what}) failed (exit {proc.returncode}):\n{err[-3000:]}")
    for line in err.splitlines():
        if line.startswith("not served:"):
            log(f"{what}: {line}")
    return json.loads(out.strip().splitlines()[-1])


def run(mode, calls, dev, cache, pythonpath=None):
    env = clean_env(pythonpath)
    if mode == "none":
        env["KFORGE_DISABLE"] = "1"
    if mode == "on-unsampled":  # no timing samples after the first 3 calls
        env["KFORGE_SAMPLE_EVERY"] = str(1 << 20)
    if mode == "served":
        env["KFORGE_CACHE_DIR"] = cache
    try:
        r = subprocess.run([sys.executable, "-c", CHILD, mode, str(calls), dev], env=env,
                           capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                           cwd=os.path.dirname(cache) if pythonpath else None)
    except subprocess.TimeoutExpired as e:  # what it printed tells how far it got
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        sys.exit(f"{mode}: no result in {CHILD_TIMEOUT_S} s; its progress:\n{err[-3000:]}")
    if r.returncode != 0:
        sys.exit(f"{mode}: exit {r.returncode}:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


T0 = time.monotonic()


def log(msg):
    """Progress, on stderr and unbuffered: a long run shows where it is."""
    print(f"[{time.monotonic() - T0:6.1f} s] {msg}", file=sys.stderr, flush=True)


MODES = ["none", "off", "on", "on-unsampled", "served"]
HEAD = {"none": "no plugin", "off": "switched off", "on": "pass-through",
        "on-unsampled": "unsampled", "served": "served"}


def table(samples, runs, variants, served, calls, label):
    """The medians so far (rounds with a result for every run)."""
    n_rounds = min(len(v) for v in samples.values())
    cases = list(samples[("none", "new")][0]["ns"])
    med = {r: {c: statistics.median(s["ns"][c] for s in samples[r][:n_rounds]) for c in cases}
           for r in runs}
    print(f"ns per call, median of {n_rounds} rounds x best of 5 x {calls} calls, "
          f"1 thread, {label} tensors", flush=True)
    for v in variants:
        if len(variants) > 1:
            print(f"\n{v} ({variants[v] or 'this tree'}):")
        print(f"{'op':26} " + " ".join(f"{HEAD[m]:>12}" for m in MODES) +
              f" {'off-none':>9} {'pass-none':>9} {'served/none':>11}")
        for c in cases:
            n = med[("none", "new")][c]
            vals = {m: med[(m, "new" if m == "none" else v)][c] for m in MODES}
            sv = f"{vals['served']:12.0f}" if served[v][c] else f"{'-':>12}"
            ratio = f"{vals['served'] / n:11.2f}" if served[v][c] else f"{'-':>11}"
            print(f"{c:26} " + " ".join(f"{vals[m]:12.0f}" for m in MODES[:-1]) + " " + sv +
                  f" {vals['off'] - n:+9.0f} {vals['on'] - n:+9.0f} " + ratio)
    if len(variants) > 1:
        print("\nextra ns over no plugin, new vs old (same run), and new/old of that extra:")
        print(f"{'op':26} " + " ".join(f"{HEAD[m]:>22}" for m in MODES[1:]))
        for c in cases:
            n = med[("none", "new")][c]
            cells = []
            for m in MODES[1:]:
                a, b = med[(m, "new")][c] - n, med[(m, "old")][c] - n
                ok = m != "served" or (served["new"][c] and served["old"][c])
                cells.append(f"{a:+6.0f} vs {b:+6.0f} {a / b if b > 0 else float('nan'):5.2f}"
                             if ok else "-")
            print(f"{c:26} " + " ".join(f"{x:>22}" for x in cells))
    sys.stdout.flush()
    return med


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, help="calls per timed loop (default 20000; 2000 on cuda)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--baseline", help="folder holding an older kernel_forge package to compare")
    p.add_argument("--json", help="write the raw numbers here")
    p.add_argument("--shapes", type=int, help="measure N new shapes instead (see above)")
    args = p.parse_args()
    if args.shapes:
        res = shapes(args.shapes)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    # a CUDA call is several us of host time, and every child pays torch's CUDA start-up
    calls = args.calls or (2000 if args.device == "cuda" else 20000)
    variants = {"new": None}
    if args.baseline:
        variants["old"] = os.path.abspath(args.baseline)
    tmp = tempfile.mkdtemp(prefix="kforge-overhead-")
    caches = {v: os.path.join(tmp, v) for v in variants}
    log(f"{args.device}: caching the served mode's kernels in the background; "
        f"{args.rounds} rounds of {1 + 4 * len(variants)} processes, {calls} calls per loop")
    setups = {v: start_setup(caches[v], args.device, pp) for v, pp in variants.items()}
    kernels = {}
    runs = [("none", "new")] + [(m, v) for v in variants for m in MODES[1:]]
    samples = {r: [] for r in runs}
    try:
        for i in range(args.rounds):
            for m, v in runs:
                if m == "served" and v not in kernels:
                    log(f"waiting for the kernels ({v})")
                    kernels[v] = finish_setup(setups[v], v)
                    log(f"kernels cached ({v}): {', '.join(kernels[v]) or 'none'}")
                samples[(m, v)].append(run(m, calls, args.device, caches[v], variants[v]))
                log(f"round {i + 1}/{args.rounds} {m}:{v}: " +
                    " ".join(f"{ns:.0f}" for ns in samples[(m, v)][-1]["ns"].values()))
            served = {v: {c: all(s["served"][c] for s in samples[("served", v)])
                          for c in samples[("served", v)][0]["served"]} for v in variants}
            if i == 0 and args.rounds > 1:  # a first table early; the final one below
                print("after round 1:")
                table(samples, runs, variants, served, calls, args.device)
                print()
    finally:
        for proc in setups.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    med = table(samples, runs, variants, served, calls, args.device)
    cases = list(med[("none", "new")])
    print("\nper round (" + " / ".join(f"{m}:{v}" for m, v in runs) + "):")
    for c in cases:
        print(f"  {c:26} " + "  ".join("/".join(f"{samples[r][i]['ns'][c]:.0f}" for r in runs)
                                       for i in range(args.rounds)))
    print("kernels added: " + "; ".join(f"{v}: {', '.join(k)}" for v, k in kernels.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"median_ns": {f"{m}:{v}": d for (m, v), d in med.items()},
                       "served": served, "rounds": args.rounds, "calls": calls,
                       "device": args.device}, f, indent=1)


if __name__ == "__main__":
    main()
