"""Host instructions per call (callgrind), per op class and plugin state: the noise-free number.

On a shared, loaded machine the wall clock of a 1-2 us call swings 2-3x between rounds;
instruction counts do not. Each state runs in one process under
`valgrind --tool=callgrind --instr-atstart=no`, and each case counts only its measured loop (a
tiny CALLGRIND_START/STOP helper built here with the system C compiler, loaded with ctypes):

  none     KFORGE_DISABLE=1, the package not imported
  off      loaded, then kernel_forge.disable()
  on       loaded and on, no kernel: the pass-through (intercept, describe, look up, count, eager)
  served   hand-written host kernels for these exact signatures in the cache, every call served
           (KFORGE_EAGER_SAMPLE_EVERY=0), output allocation included

    python benchmarks/dispatch_callgrind.py [--calls 1000] [--modes none,off,on,served]
        [--baseline DIR] [--json FILE]

--baseline DIR runs the plugin states again with DIR first on PYTHONPATH (an older kernel_forge
package with its _kforge.so). Needs valgrind (valgrind/callgrind.h) and a C compiler.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

MARK_C = r"""
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void cg_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""

# name: (call, setup of its tensors); every case reaches one intercepted op at the top level
CHILD = r"""
import ctypes, json, sys, torch
import torch.nn.functional as F
mode, calls, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(1)
if mode != "none":
    import kernel_forge as kf
    if mode == "off":
        kf.disable()
cg = ctypes.CDLL(mark)
x = torch.randn(8); y = torch.randn(8); z = torch.randn(8); o = torch.empty(8)
w = torch.randn(8); m = torch.randn(4, 8); ix = torch.tensor([0, 2, 1])
cases = {
    "add.Tensor": lambda: torch.add(x, y),
    "add_.Tensor": lambda: w.add_(y),
    "mul.out": lambda: torch.mul(x, y, out=o),
    "native_layer_norm": lambda: F.layer_norm(m, (8,)),
    "relu_": lambda: z.relu_(),
    "_to_copy": lambda: x.to(torch.float64),
    "sum.dim_IntList": lambda: m.sum(-1),
    "_softmax": lambda: torch.softmax(m, -1),
    "cat": lambda: torch.cat([x, y]),
    "embedding": lambda: F.embedding(ix, m),
}
for name, fn in cases.items():
    for _ in range(300):
        fn()
    cg.cg_start()
    for _ in range(calls):
        fn()
    cg.cg_stop()
res = {"cases": list(cases)}
if mode == "served":
    res["served"] = {r["op"]: r["served"] > r["fallback"] for r in kf.stats() if r["intercepted"]}
print(json.dumps(res))
"""

KERNELS = [  # (op, args key, kwargs key, C source, launch arg types)
    ("aten::add.Tensor", "xy", None,
     "void k(const float *x, const float *y, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] + y[i]; }",
     ["const float*", "const float*", "float*"]),
    ("aten::add_.Tensor", "wy", None,
     "void k(float *x, const float *y) { for (int i = 0; i < 8; i++) x[i] += y[i]; }",
     ["float*", "const float*"]),
    ("aten::mul.out", "xy", "out",
     "void k(const float *x, const float *y, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] * y[i]; }",
     ["const float*", "const float*", "float*"]),
    ("aten::relu_", "z", None,
     "void k(float *x) { for (int i = 0; i < 8; i++) x[i] = x[i] > 0.f ? x[i] : 0.f; }", ["float*"]),
    ("aten::sum.dim_IntList", "msum", None,
     "void k(const float *x, float *o) { for (int r = 0; r < 4; r++) { float s = 0.f;"
     " for (int c = 0; c < 8; c++) s += x[8 * r + c]; o[r] = s; } }", ["const float*", "float*"]),
    ("aten::_softmax", "m", None,
     "#include <math.h>\nvoid k(const float *x, float *y) { for (int r = 0; r < 4; r++) {"
     " const float *a = x + 8 * r; float *b = y + 8 * r; float m = -INFINITY, s = 0.f;"
     " for (int c = 0; c < 8; c++) m = a[c] > m ? a[c] : m;"
     " for (int c = 0; c < 8; c++) { b[c] = expf(a[c] - m); s += b[c]; }"
     " for (int c = 0; c < 8; c++) b[c] /= s; } }", ["const float*", "float*"]),
    ("aten::native_layer_norm", "ln", None,
     "#include <math.h>\nvoid k(const float *x, float *y, float *mean, float *rstd) {"
     " for (int r = 0; r < 4; r++) { const float *a = x + 8 * r; float *b = y + 8 * r;"
     " float m = 0.f, v = 0.f; for (int c = 0; c < 8; c++) m += a[c]; m /= 8.f;"
     " for (int c = 0; c < 8; c++) v += (a[c] - m) * (a[c] - m); v /= 8.f;"
     " float rs = 1.f / sqrtf(v + 1e-5f); mean[r] = m; rstd[r] = rs;"
     " for (int c = 0; c < 8; c++) b[c] = (a[c] - m) * rs; } }",
     ["const float*", "float*", "float*", "float*"]),
]

SETUP = r"""
import json, sys, torch, kernel_forge as kf
x = torch.randn(8); y = torch.randn(8); z = torch.randn(8); o = torch.empty(8)
w = torch.randn(8); m = torch.randn(4, 8)
args = {"xy": (x, y), "wy": (w, y), "z": (z,), "msum": (m, [-1]), "m": (m, -1, False),
        "ln": (m, [8], None, None, 1e-5)}
kwargs = {"out": {"out": o}}
done = []
for op, a, kw, src, types in json.loads(sys.argv[1]):
    try:
        kf.add_kernel(op, args[a], src, {"entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
                                        "smem": 0, "args": types},
                      kwargs=kwargs.get(kw), allow_slower=True)
        done.append(op)
    except kf.KernelForgeError as e:
        print("not served:", op, e, file=sys.stderr)
print(json.dumps(done))
"""


def cc_wrapper(tmp):
    """The host compiler the served kernels are built with, in tmp (main writes it): cc without
    AVX-512, which valgrind cannot run."""
    return os.path.join(tmp, "cc-no-avx512")


def clean_env(tmp, pythonpath=None, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    # every op of the list intercepted, as with a kernel for another signature of it: by default
    # (KFORGE_INTERCEPT=cached) an op with no kernel at all is not intercepted and costs nothing
    env["KFORGE_INTERCEPT"] = "all"
    env["CC"] = cc_wrapper(tmp)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def totals(path):
    """Instructions of one callgrind dump (its totals line: the summary line is 0 when
    collection was toggled)."""
    with open(path) as f:
        for line in f:
            m = re.match(r"totals:\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise RuntimeError(f"no totals in {path}")


def run_mode(mode, calls, mark, tmp, cache, pythonpath):
    # only the served mode sees the kernels
    env = clean_env(tmp, pythonpath, KFORGE_CACHE_DIR=cache if mode == "served" else os.path.join(tmp, "empty"))
    if mode == "none":
        env["KFORGE_DISABLE"] = "1"
    if mode == "served":
        env["KFORGE_EAGER_SAMPLE_EVERY"] = "0"
    out = os.path.join(tmp, f"cg-{mode}-{abs(hash(pythonpath))}")
    # the same string hashes and addresses in every process (Python's loop itself varies by a
    # few hundred instructions from one process to the next otherwise)
    env["PYTHONHASHSEED"] = "0"
    r = subprocess.run(["setarch", os.uname().machine, "-R", "valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                        f"--callgrind-out-file={out}", sys.executable, "-c", CHILD, mode, str(calls), mark],
                       env=env, capture_output=True, text=True, cwd=tmp if pythonpath else None)
    if r.returncode != 0:
        sys.exit(f"{mode}: exit {r.returncode}\n{r.stderr[-3000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    if len(dumps) != len(res["cases"]):
        sys.exit(f"{mode}: {len(dumps)} dumps for {len(res['cases'])} cases")
    res["instr"] = {c: totals(p) / calls for c, p in zip(res["cases"], dumps)}
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--modes", default="none,off,on,served")
    p.add_argument("--baseline", help="folder holding an older kernel_forge package to compare")
    p.add_argument("--json", help="write the raw numbers here")
    args = p.parse_args()
    modes = args.modes.split(",")
    tmp = tempfile.mkdtemp(prefix="kforge-cg-")
    with open(cc_wrapper(tmp), "w") as f:
        f.write('#!/bin/sh\nexec cc "$@" -mno-avx512f\n')
    os.chmod(cc_wrapper(tmp), 0o755)
    mark = os.path.join(tmp, "cgmark.so")
    src = os.path.join(tmp, "cgmark.c")
    with open(src, "w") as f:
        f.write(MARK_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", src, "-o", mark], check=True)
    variants = {"new": None}
    if args.baseline:
        variants["old"] = os.path.abspath(args.baseline)
    res = {}
    for v, pp in variants.items():
        cache = os.path.join(tmp, f"cache-{v}")
        if "served" in modes:
            # `python -c` puts the working folder first on sys.path: a baseline runs elsewhere
            r = subprocess.run([sys.executable, "-c", SETUP, json.dumps(KERNELS)], env=clean_env(tmp, pp, KFORGE_CACHE_DIR=cache),
                               capture_output=True, text=True, cwd=tmp if pp else None)
            if r.returncode != 0:
                sys.exit(f"kernel setup ({v}): {r.stderr[-3000:]}")
            print(f"{v}: kernels cached for {json.loads(r.stdout.strip().splitlines()[-1])}", flush=True)
            if r.stderr.strip():
                print(r.stderr.strip(), flush=True)
        for mode in modes:
            if mode == "none" and v != "new":
                continue
            print(f"{v}: {mode} ...", flush=True)
            res[(mode, v)] = run_mode(mode, args.calls, mark, tmp, cache, pp)
    cases = res[(modes[0], "new")]["cases"]
    base = res.get(("none", "new"))
    for v in variants:
        print(f"\ninstructions per call ({v}), {args.calls} calls; extra over no plugin in ()")
        print(f"{'op':20} " + " ".join(f"{m:>16}" for m in modes))
        for c in cases:
            cells = []
            for m in modes:
                r = res[(m, "new" if m == "none" else v)]
                n = r["instr"][c]
                cell = f"{n:,.0f}"
                if base and m != "none":
                    cell += f" ({n - base['instr'][c]:+,.0f})"
                op = "aten::" + c
                if m == "served" and not r.get("served", {}).get(op, False):
                    cell += "!"
                cells.append(f"{cell:>16}")
            print(f"{c:20} " + " ".join(cells))
    print("(served: '!' marks a case whose op was not served: no kernel written for it here)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{m}:{v}": r for (m, v), r in res.items()}, f, indent=1)


if __name__ == "__main__":
    main()
