"""What the zoo's model scripts share: their options and the timed loop that prints one JSON line.

Each script is written as a user writes one: it builds its model on the CPU with seeded random
weights (nothing is downloaded), moves it with `.to(device, dtype)` (and channels_last where users
do), then runs untimed forwards and a timed loop of forwards under torch.inference_mode() (or
torch.no_grad(), as transformers' generate() and timm's validate.py do, with --grad-mode no_grad).
Options, the same for every script:

  --device cuda|cpu      default: cuda when available
  --dtype f32|f16|bf16   default: the script's on CUDA, f32 on the CPU
  --iters N              timed forwards (default: the script's)
  --warmup N             untimed forwards first (default 5; with --compile the first compiles)
  --compile              wrap the model in torch.compile (default options)
  --plugin               `import kernel_forge` before anything is built: the one line a user adds
  --grad-mode inference|no_grad   the forwards' context (default inference: torch.inference_mode)
  --tiny                 drastically smaller sizes (CPU tests)
  --ab BLOCKS            with --plugin, after the timed loop: BLOCKS blocks of forwards in this
                         one process, kernel_forge.enable() and disable() in turn, so that the
                         process-to-process noise cancels (default 0: none)
  --save-output FILE     torch.save the last forward's output (on the CPU; floats as float32)
  --profile N            with --plugin, last: torch.profiler (CPU activity) over blocks of N
                         forwards enabled and disabled in turn; prints the ops whose host time
                         per forward differs most, and `PROFILE {json}`

The last line printed is `ZOO {json}`: the median, mean and min ms per forward (CUDA events
around each forward, which starts on an idle GPU, so host-side costs are in the time; wall time
on the CPU), the host's time to issue a forward, the first forward's wall time (compilation with
--compile, the first-use checks with --plugin), and, when kernel_forge is loaded in the process,
what `kernel_forge.stats()` says it served; with --ab, `ab`: the median ms with the plugin
enabled and disabled (disabled: every intercepted call goes straight to eager, so the
pass-through's own cost stays in both) and their ratio, and the same of the 10th percentiles
(`speedup_p10`: on a shared host, the forwards least slowed by other work).
"""

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
NAMES = {v: k for k, v in DTYPES.items()}
SAVE_MAX = 1 << 23  # elements of an output kept by --save-output (the first ones, flattened)


def parse(doc: str, *, dtype: str, iters: int = 30, warmup: int = 5):
    """The script's options; with --plugin, kernel_forge is imported here, before the model."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=sorted(DTYPES), help=f"default: {dtype} on CUDA, f32 on CPU")
    p.add_argument("--iters", type=int, default=iters, help=f"timed forwards (default {iters})")
    p.add_argument("--warmup", type=int, default=warmup,
                   help=f"untimed forwards first (default {warmup}, at least 1)")
    p.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    p.add_argument("--plugin", action="store_true", help="import kernel_forge first")
    p.add_argument("--grad-mode", choices=("inference", "no_grad"), default="inference",
                   help="the forwards' context: torch.inference_mode (default) or torch.no_grad")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (CPU tests)")
    p.add_argument("--save-output", metavar="FILE", help="torch.save the last output")
    p.add_argument("--ab", type=int, default=0, metavar="BLOCKS",
                   help="with --plugin: blocks of forwards enabled and disabled in turn (0: none)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="with --plugin: each op's host time per forward, enabled against disabled")
    a = p.parse_args()
    if a.plugin:
        import kernel_forge  # noqa: F401
    a.device = torch.device(a.device)
    if a.device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {a.device}: no CUDA device is available")
    a.dtype = DTYPES[a.dtype or (dtype if a.device.type == "cuda" else "f32")]
    a.warmup = max(a.warmup, 1)
    torch.manual_seed(0)
    return a


def maybe_compile(model, a):
    return torch.compile(model) if a.compile else model


def _sync(a):
    if a.device.type == "cuda":
        torch.cuda.synchronize(a.device)


def _saved(out):
    if isinstance(out, (tuple, list)):
        out = out[0]
    t = out.detach().reshape(-1)[:SAVE_MAX].cpu()
    return t.float() if t.is_floating_point() else t


def plugin_stats() -> dict:
    """What the plugin served in this process, from its public stats (nothing when not loaded)."""
    kf = sys.modules.get("kernel_forge")
    if kf is None:
        return {"plugin_loaded": False}
    rows = kf.stats()
    served = sorted((r for r in rows if r["served"]), key=lambda r: -r["served"] * (r["served_us"] or 0))
    return {
        "plugin_loaded": True, "kernel_forge": kf.__version__, "cache_dir": kf.cache_dir(),
        "cache_entries": len(kf.cache_entries()),
        "served_signatures": len(served), "served_calls": sum(r["served"] for r in served),
        "kernels_attached": sum(1 for r in rows if r["has_kernel"]),
        "stopped": [{"signature": r["signature"], "stopped": r["stopped"]}
                    for r in rows if r.get("stopped")],
        "served": [{k: r[k] for k in ("op", "signature", "calls", "served", "fallback", "eager_us",
                                       "served_us")} for r in served[:20]],
        "chains": [{k: c.get(k) for k in ("ops", "state", "reason", "stopped", "heads", "completed",
                                          "dropped", "skipped", "kernel_us", "eager_us", "members_us",
                                          "cache_key")}
                   for c in kf.chain_entries()],
    }


def _timed(fn, a, n):
    """n forwards, each from an idle device: (ms, host ms to issue it, the last output)."""
    ms, host_ms, out = [], [], None
    for _ in range(n):
        _sync(a)
        if a.device.type == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            s.record()
            out = fn()
            e.record()
            host_ms.append(1e3 * (time.perf_counter() - t0))
            e.synchronize()
            ms.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter()
            out = fn()
            ms.append(1e3 * (time.perf_counter() - t0))
            host_ms.append(ms[-1])
    return ms, host_ms, out


def _ab(fn, a) -> dict:
    """Blocks of forwards with the plugin enabled and disabled in turn, in the order on, off,
    off, on, on, off, ... (a load that fades or grows over the run then weighs on both sides
    alike; the first forward of a block, right after the switch, untimed); medians per side and
    per block. Ends enabled."""
    kf = sys.modules["kernel_forge"]
    per = max(3, a.iters // 4)
    side = {True: ([], []), False: ([], [])}
    blocks = []
    try:
        for b in range(2 * a.ab):
            on = (b + 1) // 2 % 2 == 0
            (kf.enable if on else kf.disable)()
            fn()
            ms, host_ms, _ = _timed(fn, a, per)
            side[on][0].extend(ms)
            side[on][1].extend(host_ms)
            blocks.append(["on" if on else "off", round(statistics.median(ms), 4)])
    finally:
        kf.enable()
    en, dis = statistics.median(side[True][0]), statistics.median(side[False][0])
    # a shared host slows whole stretches of forwards: the 10th percentiles are the least disturbed
    p10 = {on: sorted(side[on][0])[len(side[on][0]) // 10] for on in side}
    return {"blocks": a.ab, "per_block": per, "enabled_ms": en, "disabled_ms": dis,
            "speedup": dis / en, "enabled_p10_ms": p10[True], "disabled_p10_ms": p10[False],
            "speedup_p10": p10[False] / p10[True], "enabled_host_ms": statistics.median(side[True][1]),
            "disabled_host_ms": statistics.median(side[False][1]), "by_block": blocks}


def _profile(fn, a) -> dict:
    """Host time per forward of each op (torch.profiler, CPU activity: an intercepted call's time
    includes the plugin's work), over blocks of a.profile forwards enabled and disabled in the
    order on, off, off, on; the ops whose total differs most, and the whole forward's op time."""
    from torch.profiler import ProfilerActivity, profile

    kf = sys.modules["kernel_forge"]
    per = {True: {}, False: {}}
    n = {True: 0, False: 0}
    try:
        for on in (True, False, False, True):
            (kf.enable if on else kf.disable)()
            fn()
            _sync(a)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(a.profile):
                    fn()
                _sync(a)
            n[on] += a.profile
            for e in prof.key_averages():
                c, t, s = per[on].get(e.key, (0, 0.0, 0.0))
                per[on][e.key] = (c + e.count, t + e.cpu_time_total, s + e.self_cpu_time_total)
    finally:
        kf.enable()
    rows = []
    for k in set(per[True]) | set(per[False]):
        c1, t1, s1 = per[True].get(k, (0, 0.0, 0.0))
        c0, t0, s0 = per[False].get(k, (0, 0.0, 0.0))
        rows.append({"op": k, "calls_on": c1 / n[True], "calls_off": c0 / n[False],
                     "us_on": t1 / n[True], "us_off": t0 / n[False],
                     "self_us_on": s1 / n[True], "self_us_off": s0 / n[False]})
    rows.sort(key=lambda r: -abs(r["us_on"] - r["us_off"]))
    self_on = sum(r["self_us_on"] for r in rows)
    self_off = sum(r["self_us_off"] for r in rows)
    print(f"host time of the ops per forward (self, summed): enabled {self_on:.0f} us, disabled "
          f"{self_off:.0f} us; per op, enabled vs disabled (calls per forward, us per forward):")
    for r in rows[:25]:
        print(f"  {r['op'][:40]:40s} calls {r['calls_on']:7.1f} / {r['calls_off']:7.1f}  us "
              f"{r['us_on']:9.1f} / {r['us_off']:9.1f}  self {r['self_us_on']:8.1f} / "
              f"{r['self_us_off']:8.1f}")
    return {"forwards": a.profile, "self_us_on": self_on, "self_us_off": self_off, "ops": rows[:60]}


def bench(name: str, fn, a, *, family: str, source: str, unit: str = "forward", **info):
    """Warm-up forwards, then a timed loop; prints `ZOO {json}` and returns the record."""
    t_built = time.perf_counter()
    cuda = a.device.type == "cuda"
    grad_ctx = torch.no_grad if a.grad_mode == "no_grad" else torch.inference_mode
    with grad_ctx():
        t0 = time.perf_counter()
        out = fn()
        _sync(a)
        first_ms = 1e3 * (time.perf_counter() - t0)
        for _ in range(a.warmup - 1):
            out = fn()
        _sync(a)
        ms, host_ms, out = _timed(fn, a, a.iters)
        ab = _ab(fn, a) if a.ab > 0 and "kernel_forge" in sys.modules else None
        prof = _profile(fn, a) if a.profile > 0 and "kernel_forge" in sys.modules else None
    if a.save_output:
        torch.save(_saved(out), a.save_output)
    rec = {"model": name, "family": family, "source": source, "unit": unit,
           "device": str(a.device), "dtype": NAMES[a.dtype], "compile": a.compile,
           "iters": a.iters, "warmup": a.warmup, "grad_mode": a.grad_mode,
           "median_ms": statistics.median(ms), "mean_ms": statistics.fmean(ms), "min_ms": min(ms),
           "host_median_ms": statistics.median(host_ms), "first_ms": first_ms,
           "build_s": t_built - T_START, "total_s": time.perf_counter() - T_START,
           "torch": torch.__version__, **info}
    if ab is not None:
        rec["ab"] = ab
    if prof is not None:
        print("PROFILE " + json.dumps(prof), flush=True)
    if cuda:
        rec["gpu"] = torch.cuda.get_device_name(a.device)
    rec.update(plugin_stats())
    print(f"{name}: {rec['median_ms']:.3f} ms per {unit} (median of {a.iters}; "
          f"{rec['dtype']}, {a.device}{', compiled' if a.compile else ''})", flush=True)
    print("ZOO " + json.dumps(rec), flush=True)
    return rec
