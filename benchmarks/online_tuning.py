"""Online tuning as a user leaves it on: a model run in a loop for N seconds with KFORGE_TUNE=1.

    python3 benchmarks/online_tuning.py --seconds 300 --model MODEL.py [--device cuda]
                                        [--eager-seconds 60] [--compare-warmup] [--out FILE.json]
                                        [--burst-ms B --idle-ms I] [--model-args="--dtype bf16"]
                                        [--warmup-args="--time-budget 60"]

MODEL.py defines make(device) returning a callable that runs one forward (and, run as a script,
may do anything: `kforge warmup MODEL.py` runs it as a workload, see --compare-warmup), or is a
model zoo script (benchmarks/zoo/models/*.py, as it is: it is run with `--device D --plugin` and
--model-args, and the forward it hands to _zoo.bench is the loop's, under inference_mode).
Without --model, a small built-in model (layer_norm, softmax, gelu layers) is used.

With --idle-ms, the model pauses: forwards back to back for --burst-ms, then --idle-ms without
any (a served model between requests); the tuner times in those gaps (README, "Online tuning";
KFORGE_TUNE_QUIET_WAIT=0 through --env turns that off, to compare). Only forwards are timed.

Each phase is a fresh process with a fresh cache folder:
  1. eager: KFORGE_DISABLE=1 (the plugin loaded, nothing registered), the loop for
     --eager-seconds: p50/p99 forward time;
  2. online: KFORGE_TUNE=1, the loop for --seconds, kernel_forge.tuner_status() read about once
     a second between forwards: time to the first and third landed kernel (from the process
     start and from the signature passing the thresholds), p50/p99 forward time while the tuner
     searches or confirms, p50 over the last 20% of the run (the final speed, "final speedup"
     against eager), p50 per 10 s, per second ("by_second": forwards, p50 and the tuner's
     phase/step), and at the end, in the same process, 4 + 4 blocks of 20
     forwards with kernel_forge.enable() and disable() in turn, the tuner stopped first and
     2 s of untimed forwards after (the zoo's `_zoo._ab`; "end_ab": what landed, free of
     process noise and of the tuner's work);
  3. with --compare-warmup: `kforge warmup MODEL.py` into another fresh cache, then the loop
     served from it for --eager-seconds: kforge warmup's speedup, to compare with 2's.
Prints one JSON document (also written to --out, after each phase too); --stderr FILE keeps the
processes' whole stderr (KFORGE_LOG=info through --env: the tuner's timeline; --stall-dump MS:
every thread's Python stack whenever a forward of the online run takes longer than MS).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

BUILTIN = r'''
import torch
import torch.nn.functional as F

def make(device="cpu"):
    torch.manual_seed(0)
    x = torch.randn(64, 1024, device=device)
    w = torch.randn(1024, device=device)
    b = torch.randn(1024, device=device)

    def forward():
        y = x
        for _ in range(4):
            y = F.layer_norm(y, (1024,), w, b)
            y = F.gelu(y)
            y = torch.softmax(y, -1)
        return y
    return forward

if __name__ == "__main__":
    f = make()
    for _ in range(200):
        f()
'''

CHILD = r'''
import contextlib, json, os, shlex, sys, time
T0 = time.time()
path, device, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
burst_s, idle_s, model_args = float(sys.argv[4]) / 1e3, float(sys.argv[5]) / 1e3, sys.argv[6]
sys.path.insert(0, os.path.dirname(path))
ZOO_MODELS = sys.argv[7]
STALL_MS = float(sys.argv[8])
zoo = sys.argv[9] == "1"  # a script on the zoo's harness (the parent's is_zoo)
import importlib.util
import torch
spec = importlib.util.spec_from_file_location("kf_bench_model", path)
mod = importlib.util.module_from_spec(spec)
if zoo:  # a zoo script as it is: the forward it would time is ours
    import _zoo
    got = {}

    class Built(Exception):
        pass

    def bench(name, fn, a, **kw):
        got.update(name=name, fn=fn)
        raise Built

    _zoo.bench = bench
    sys.argv = [path, "--device", device, "--plugin", *shlex.split(model_args)]
    try:
        spec.loader.exec_module(mod)
    except Built:
        pass
    fwd = got["fn"]
else:
    spec.loader.exec_module(mod)
import kernel_forge as kf
if not zoo:
    fwd = mod.make(device)
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
times, phases, steps, events = [], [], [], []
last_poll, landed = 0.0, 0
end = time.time() + seconds
phase, step = "off", None
burst0 = time.time()
ctx = torch.inference_mode() if zoo else contextlib.nullcontext()
ctx.__enter__()
fwd_t0 = None  # when the forward in progress began (the stall watchdog)
if STALL_MS > 0:
    import faulthandler, threading

    def watch():
        dumped = None
        while True:
            time.sleep(STALL_MS / 4e3)
            t0 = fwd_t0
            if t0 is not None and t0 != dumped and time.perf_counter() - t0 > STALL_MS / 1e3:
                dumped = t0
                print(f"STALL: a forward at {time.time() - T0:.2f} s has run {STALL_MS:.0f} ms; "
                      "every thread's stack:", file=sys.stderr, flush=True)
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)

    threading.Thread(target=watch, daemon=True).start()
while time.time() < end:
    if idle_s > 0 and time.time() - burst0 >= burst_s:
        time.sleep(idle_s)  # between requests: no call at all
        burst0 = time.time()
    t = fwd_t0 = time.perf_counter()
    fwd()
    sync()
    fwd_t0 = None
    times.append((time.time() - T0, (time.perf_counter() - t) * 1e3))
    phases.append(phase)
    steps.append(step)
    if time.time() - last_poll > 1.0:
        last_poll = time.time()
        st = kf.tuner_status()
        phase, step = st.get("phase", "off"), st.get("step")
        if st.get("current") is None and phase != "off":
            phase = "waiting"
        for rec in st.get("landed", [])[landed:]:
            events.append({"t": time.time() - T0, **rec})
        landed = len(st.get("landed", []))
st = kf.tuner_status()
served = sum(r["served"] for r in kf.stats())
ab = None  # after the tuned run: what landed, enabled and disabled in turn (the zoo's A/B)
if os.environ.get("KFORGE_TUNE") == "1":
    sys.path.insert(0, ZOO_MODELS)
    import types
    import _zoo
    from kernel_forge import _tuner
    if _tuner._online is not None:  # what landed, without the tuner's work beside it
        _tuner._online.shutdown()
        for _ in range(100):
            if not _tuner._online.busy and not _tuner._online.procs:
                break
            time.sleep(0.1)
        # the killed worker's and evaluator's CUDA contexts are torn down by the driver
        # meanwhile: forwards for 2 s, untimed, before the A/B
        t_settle = time.time() + 2.0
        while time.time() < t_settle:
            fwd()
        sync()
    ab = _zoo._ab(fwd, types.SimpleNamespace(device=torch.device(device), iters=80, ab=4))
print("ONLINE " + json.dumps({"times": times, "phases": phases, "steps": steps, "landed": events,
      "ab": ab,
      "status": {k: st.get(k) for k in ("landed", "refused", "time_spent_s", "searches",
                                        "hot_at", "elapsed_s", "settings", "gates")},
      "served_calls": served}))
'''


def is_zoo(model):
    """A script on the zoo's harness: a zoo model, or a held-out one (some through _vision)."""
    with open(model) as f:
        text = f.read()
    return "import _zoo" in text or "import _vision" in text


def buckets(times, t0, width):
    """The forward times in consecutive `width`-second stretches from t0 (empty ones left out)."""
    out = {}
    for t, ms in times:
        out.setdefault(int((t - t0) // width), []).append(ms)
    return [out[k] for k in sorted(out)]


def by_second(times, phases, steps, t0):
    """Per second from t0: [second, forwards, p50 ms, the tuner's phase and step at its last
    forward], for the timeline of what slowed the model when."""
    ms_at, step_at = {}, {}
    for (t, ms), ph, sp in zip(times, phases, steps or [None] * len(times)):
        ms_at.setdefault(int(t - t0), []).append(ms)
        step_at[int(t - t0)] = f"{ph}/{sp}" if sp else ph
    return [[k, len(v), round(statistics.median(v), 3), step_at[k]] for k, v in sorted(ms_at.items())]


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run_loop(model, device, seconds, env_extra, cache_dir, pattern=(0.0, 0.0), model_args="",
             stderr_to=None, stall_ms=0.0):
    env = dict(os.environ)
    for k in ("KFORGE_TUNE", "KFORGE_DISABLE", "KFORGE_CACHE"):
        env.pop(k, None)
    env.update(env_extra)
    env["KFORGE_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
        child = f.name
    try:
        p = subprocess.run([sys.executable, child, os.path.abspath(model), device, str(seconds),
                            str(pattern[0]), str(pattern[1]), model_args,
                            os.path.join(HERE, "zoo", "models"), str(stall_ms),
                            "1" if is_zoo(model) else "0"],
                           env=env, capture_output=True, text=True, timeout=seconds + 600)
    finally:
        os.unlink(child)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("ONLINE ")), None)
    if line is None:
        raise SystemExit(f"the model loop failed (exit {p.returncode}): {p.stderr[-3000:]}")
    doc = json.loads(line[7:])
    doc["stderr_tail"] = p.stderr[-4000:]
    if stderr_to:
        with open(stderr_to, "a") as f:
            f.write(p.stderr)
    return doc


def summary(doc, skip_s=3.0):
    ts = [ms for t, ms in doc["times"] if t >= doc["times"][0][0] + skip_s] or \
        [ms for _, ms in doc["times"]]
    return {"forwards": len(doc["times"]), "p50_ms": statistics.median(ts), "p99_ms": pct(ts, 0.99),
            "mean_ms": statistics.fmean(ts)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", help="a script defining make(device) -> forward callable")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--eager-seconds", type=float, default=None,
                    help="the eager and warm-up phases' loops (default: seconds / 5, 10 to 60)")
    ap.add_argument("--compare-warmup", action="store_true")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the online run")
    ap.add_argument("--burst-ms", type=float, default=100.0,
                    help="with --idle-ms: forwards back to back this long (default 100)")
    ap.add_argument("--idle-ms", type=float, default=0.0,
                    help="a pause without calls after each burst (default 0: no pauses)")
    ap.add_argument("--model-args", default="", help="more options for a zoo script")
    ap.add_argument("--warmup-args", default="",
                    help="options for --compare-warmup's kforge warmup (e.g. --time-budget 60)")
    ap.add_argument("--out")
    ap.add_argument("--stderr", help="append the model processes' stderr to this file")
    ap.add_argument("--stall-dump", type=float, default=0.0, metavar="MS",
                    help="in the online run, every thread's Python stack to stderr when a "
                         "forward runs longer than MS")
    a = ap.parse_args(argv)
    device = a.device
    if device is None:
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    eager_s = a.eager_seconds or max(10.0, min(60.0, a.seconds / 5))
    tmp = tempfile.mkdtemp(prefix="kforge-online-bench-")
    model = a.model
    if not model:
        model = os.path.join(tmp, "builtin_model.py")
        with open(model, "w") as f:
            f.write(BUILTIN)
    extra = dict(kv.split("=", 1) for kv in a.env)
    out = {"model": a.model or "builtin (4 x layer_norm, gelu, softmax on 64x1024 f32)",
           "device": device, "seconds": a.seconds, "eager_seconds": eager_s, "env": extra,
           "model_args": a.model_args,
           "pattern": {"burst_ms": a.burst_ms, "idle_ms": a.idle_ms} if a.idle_ms > 0 else None}
    pattern = (a.burst_ms, a.idle_ms)

    def save():  # after each phase: a run cut short keeps what it measured
        if a.out:
            with open(a.out, "w") as f:
                json.dump(out, f, indent=1)

    eager = run_loop(model, device, eager_s, {"KFORGE_DISABLE": "1"}, os.path.join(tmp, "c0"),
                     pattern, a.model_args, a.stderr)
    out["eager"] = summary(eager)
    save()
    online = run_loop(model, device, a.seconds, dict({"KFORGE_TUNE": "1"}, **extra),
                      os.path.join(tmp, "c1"), pattern, a.model_args, a.stderr, a.stall_dump)
    times, phases = online["times"], online["phases"]
    t_first = times[0][0]
    during = [ms for (t, ms), ph in zip(times, phases) if ph in ("ramp", "deep")]
    steps = online.get("steps") or [None] * len(times)
    by_step = {}  # the forwards while the tuner was at each step of a pass (polled every second)
    for (t, ms), ph, sp in zip(times, phases, steps):
        if ph in ("ramp", "deep", "duty wait"):
            by_step.setdefault("duty wait" if ph == "duty wait" else sp or "start", []).append(ms)
    slowest = sorted(zip(times, phases, steps), key=lambda x: -x[0][1])[:10]
    tail_from = t_first + 0.8 * (times[-1][0] - t_first)
    tail = [ms for t, ms in times if t >= tail_from]
    landed = online["landed"]
    out["online"] = {
        "forwards": len(times),
        "first_kernel_s": landed[0]["t"] if landed else None,
        "third_kernel_s": landed[2]["t"] if len(landed) >= 3 else None,
        "first_kernel_after_hot_s": landed[0]["after_hot_s"] if landed else None,
        "landed": [{k: r.get(k) for k in ("t", "signature", "pass", "after_hot_s", "speedup",
                                          "confirmed_ratio", "spread", "confirm_s",
                                          "confirm_ready_s")} for r in landed],
        "refused": online["status"].get("refused"),
        "time_spent_s": online["status"].get("time_spent_s"),
        "searches": online["status"].get("searches"),
        "settings": online["status"].get("settings"),
        "gates": online["status"].get("gates"),
        "during_tuning": {"forwards": len(during), "p50_ms": statistics.median(during) if during
                          else None, "p99_ms": pct(during, 0.99),
                          "mean_ms": statistics.fmean(during) if during else None},
        "final": {"forwards": len(tail), "p50_ms": statistics.median(tail) if tail else None},
        "served_calls": online["served_calls"],
        "by_step": {k: {"forwards": len(v), "p50_ms": statistics.median(v), "p99_ms": pct(v, 0.99),
                        "max_ms": max(v)} for k, v in by_step.items()},
        "slowest": [{"t": t, "ms": ms, "phase": ph, "step": sp} for (t, ms), ph, sp in slowest],
        "stderr_tail": online["stderr_tail"][-2500:],
        "p50_by_10s": [statistics.median(b) for b in buckets(times, t_first, 10.0)],
        "by_second": by_second(times, phases, steps, t_first),
    }
    out["online"]["end_ab"] = online.get("ab")
    e50 = out["eager"]["p50_ms"]
    o = out["online"]
    o["during_tuning"]["p50_vs_eager"] = (o["during_tuning"]["p50_ms"] / e50
                                          if o["during_tuning"]["p50_ms"] else None)
    o["during_tuning"]["p99_vs_eager"] = (o["during_tuning"]["p99_ms"] / out["eager"]["p99_ms"]
                                          if o["during_tuning"]["p99_ms"] else None)
    o["final_speedup"] = e50 / o["final"]["p50_ms"] if o["final"]["p50_ms"] else None
    save()
    if a.compare_warmup:
        wdir = os.path.join(tmp, "c2")
        env = dict(os.environ, KFORGE_CACHE_DIR=wdir,
                   PYTHONPATH=ROOT + (os.pathsep + os.environ["PYTHONPATH"]
                                      if os.environ.get("PYTHONPATH") else ""))
        env.pop("KFORGE_TUNE", None)
        t = time.time()
        import shlex

        # a zoo script is the workload as it is, on the same device and options
        script = [model, "--device", device, *shlex.split(a.model_args)] if is_zoo(model) \
            else [model]
        p = subprocess.run([sys.executable, "-m", "kernel_forge", "warmup",
                            *shlex.split(a.warmup_args), *script], env=env,
                           capture_output=True, text=True)
        out["warmup"] = {"wall_s": time.time() - t, "exit": p.returncode,
                         "args": a.warmup_args, "stderr_tail": p.stderr[-1500:]}
        served = run_loop(model, device, eager_s, {}, wdir, pattern, a.model_args, a.stderr)
        s = summary(served)
        out["warmup"].update(s, speedup=e50 / s["p50_ms"])
    print(json.dumps(out, indent=1))
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
