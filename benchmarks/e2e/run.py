"""End to end on one workload, in one process on one device: eager, Kernel Forge after
`kforge warmup`, and torch.compile side by side; writes e2e-MODEL.json and e2e-MODEL.md.

    python benchmarks/e2e/run.py MODEL [--device cuda|cpu] [--tiny] [--iters N] [--rounds R]
        [--warmup-budget S] [--iterations N] [--max-jobs N] [--min-share F] [--no-compile]
        [--out DIR] [--cache-dir DIR] [--time-limit S] [--no-cold-start | --cold-start]

Phases, each printed with its wall time and each bounded (README.md beside this file): build;
eager (plugin off: reference output and time); profile (plugin on, no kernel yet: calls and eager
time per signature); warm-up (kforge warmup on forward.py; --warmup-budget); plugin (the warm
cache reloaded, first use, outputs vs eager); torch.compile (default mode, --compile-timeout);
rounds (eager / plugin / compile alternating); cold start (fresh processes on the warm cache).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time

T_START = time.monotonic()  # --time-limit counts from here, the imports included
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import coldstart  # noqa: E402
import envinfo  # noqa: E402
import harness  # noqa: E402
import report  # noqa: E402
import warm  # noqa: E402
from phases import PhaseTimeout, Run, time_limit  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_workload_args(p)
    p.add_argument("--iters", type=int, default=30, help="timed forwards per round (30)")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (5)")
    p.add_argument("--warmup-budget", type=float, default=150,
                   help="seconds for the whole warm-up, both script runs and the search (150); "
                        "0: no warm-up, serve what --cache-dir holds")
    p.add_argument("--iterations", type=int, default=30, help="candidates per signature (30)")
    p.add_argument("--max-jobs", type=int, default=6, help="signatures to tune at most (6)")
    p.add_argument("--min-share", type=float, default=0.01,
                   help="tune signatures with at least this share of the recorded time (0.01)")
    p.add_argument("--ops", default="",
                   help="tune only these ops, a comma list (aten::gelu,aten::_softmax)")
    p.add_argument("--script-iters", type=int, default=5,
                   help="forwards per warm-up script run (5; >= 3 to capture 3 real calls)")
    p.add_argument("--proposer", choices=["builtin", "llm", "mixed"],
                   help="default: mixed when KFORGE_LLM_URL is set, else builtin")
    p.add_argument("--llm-budget-usd", type=float, help="stop a job's search at this LLM cost")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--compile-backend", default="inductor",
                   help="torch.compile backend (inductor, in the default mode; 'eager' for tests)")
    p.add_argument("--compile-timeout", type=float, default=240,
                   help="seconds for torch.compile's first calls (240)")
    p.add_argument("--no-cold-start", action="store_true", help="skip the cold-start processes")
    p.add_argument("--cold-start", action="store_true",
                   help="only the cold-start measurement, on the warm cache in --cache-dir "
                        "(writes e2e-MODEL-coldstart.json and .md)")
    p.add_argument("--cold-start-runs", type=int, default=1, help="processes per mode (1)")
    p.add_argument("--cold-start-timeout", type=float, default=120,
                   help="seconds per cold-start process (120)")
    p.add_argument("--time-limit", type=float, default=480,
                   help="seconds for this whole run: later phases shrink to fit (480; 0: none)")
    p.add_argument("--out", default=".", help="folder for e2e-MODEL.json and .md (.)")
    p.add_argument("--cache-dir", help="kernel cache folder (default: a fresh temporary one)")
    a = p.parse_args(argv)
    if a.cold_start and not a.cache_dir:
        p.error("--cold-start measures an existing warm cache: give its --cache-dir")
    if a.iters < 1 or a.rounds < 1:
        p.error("--iters and --rounds must be at least 1")
    return a


def measure_eager(run, s):
    import kernel_forge as kf

    with run.phase("eager"):
        kf.disable()
        ref = s.forward().clone()
        s.time_ms(2)  # warm: allocator, library handles, autotuners
        times = s.time_ms(run.a.iters)
        run.res["check"] = {"eager_repeat": report.compare(s.forward(), ref, s.wl.tolerance)}
        run.log(f"eager {harness.median(times):.3f} ms per forward")
    return ref, times


def profile(run, s):
    """Calls and eager time per signature, in this process: the plugin on, no kernel yet."""
    import kernel_forge as kf
    from kernel_forge import _jobs, _tuner

    with run.phase("profile"):
        kf.enable()
        s.forward()  # first calls: the plugin learns eager's output layouts
        s.sync()

        def forwards():
            for _ in range(run.a.iters):
                s.forward()
            s.sync()

        rows = recorded_stats(forwards)
        _tuner.add_bytes_moved(rows)
        with _jobs.bypass():  # copy bandwidth; on the host at the row's own size
            for r in rows:
                if r.get("bytes_moved"):
                    r["bw_gbs"] = _jobs.copy_bandwidth_gbs(
                        s.device, 1 << 26 if s.device.type == "cuda" else r["bytes_moved"])
        if any(r["has_kernel"] for r in rows):
            run.note("the cache already had kernels for some signatures: served from their "
                     "first call, their eager time per call is unknown here")
    return rows


def check_plugin(run, s, ref):
    import kernel_forge as kf

    with run.phase("plugin"):
        kf.reload_cache()
        kf.enable()
        for _ in range(3):  # the first one checks every served kernel against eager (first use)
            s.forward()
        run.res["check"]["plugin"] = report.compare(s.forward(), ref, s.wl.tolerance)
        run.log(f"plugin output vs eager: {run.res['check']['plugin']}")


SETTLE_S = 15.0  # the longest wait for eager to come back to its time before the warm-up
SETTLE_TOL = 0.05


def settle(run, s, before_ms: float):
    """Wait until eager is back within 5% of its time before the warm-up. Right after the
    warm-up this process's host runs slower for a second or two (its worker processes exiting,
    their pinned memory and the job files being released, we think), which the first rounds
    would measure: ResNet-50 alone (run N) ran eager at 7.5-7.7 ms in its first three rounds,
    then 4.6 ms."""
    import kernel_forge as kf

    with run.phase("settle"):
        kf.disable()
        t0, meds = time.monotonic(), []
        while time.monotonic() - t0 < min(SETTLE_S, max(run.left() / 10, 1.0)):
            meds.append(harness.median(s.time_ms(max(3, run.a.iters // 4))))
            if meds[-1] <= (1 + SETTLE_TOL) * before_ms:
                break
        wait = time.monotonic() - t0
        run.res["settle"] = {"s": wait, "eager_medians_ms": meds,
                             "settled": bool(meds) and meds[-1] <= (1 + SETTLE_TOL) * before_ms}
        run.log(f"settle: eager {', '.join(f'{m:.3f}' for m in meds)} ms in {wait:.1f} s "
                f"(before the warm-up {before_ms:.3f} ms)")
        if not run.res["settle"]["settled"]:
            run.note(f"eager did not come back within 5% of its time before the warm-up "
                     f"({before_ms:.3f} ms) in {wait:.0f} s: the rounds ran anyway")


def compile_model(run, s, ref, eager_ms):
    """torch.compile (default mode) with the time left after reserving the rounds' (the cold
    start, which matters less, gets what remains after it)."""
    import kernel_forge as kf

    a = run.a
    reserve = 10 + 3 * a.rounds * (a.iters + 2) * eager_ms / 1e3 * 1.5
    limit = min(a.compile_timeout, run.left() - reserve)
    if limit < 20:
        run.note(f"torch.compile skipped: {max(limit, 0):.0f} s left for it under --time-limit")
        return None
    compiled = None
    with run.phase("compile"):
        kf.disable()
        try:
            with time_limit(limit, "torch.compile"):
                compiled = torch.compile(s.model, backend=a.compile_backend)
                for _ in range(3):  # compiles, then any recompilation the next calls need
                    t = time.perf_counter()
                    out = s.forward(compiled)
                    s.sync()
                    last_s = time.perf_counter() - t
            run.res["check"]["compile"] = report.compare(out, ref, s.wl.tolerance)
            if last_s > max(2.0, 20 * eager_ms / 1e3):  # the rounds would recompile too
                compiled = None
                run.note(f"torch.compile: its third call still took {last_s:.1f} s "
                         "(recompiling at every call?); not timed")
        except PhaseTimeout as e:
            compiled = None
            run.note(f"torch.compile: {e}")
        except Exception as e:  # a model torch.compile cannot take: reported, not fatal
            compiled = None
            run.note(f"torch.compile failed: {type(e).__name__}: {str(e)[:400]}")
    return compiled


def rounds(run, s, compiled):
    """Alternating rounds, the order rotated each round, so that drift hits every variant."""
    import kernel_forge as kf

    with run.phase("rounds"):
        variants = {"eager": (kf.disable, None), "plugin": (kf.enable, None)}
        if compiled is not None:
            variants["compile"] = (kf.disable, compiled)
        chains_before = kf.chain_entries()  # their counters are the process's: a difference
        names = list(variants)
        times = {k: [] for k in names}
        host = {k: [] for k in names}
        meds = {k: [] for k in names}
        for i in range(run.a.rounds):
            for name in names[i % len(names):] + names[:i % len(names)]:
                switch, model = variants[name]
                switch()
                ts = s.time_ms(run.a.iters, model)
                times[name] += ts
                host[name] += s.host_ms
                meds[name].append(harness.median(ts))
        run.res["chains"] = report.chain_rows(chains_before, kf.chain_entries(),
                                              run.a.rounds * run.a.iters,
                                              (run.res.get("warmup") or {}).get("rows"))
        kf.enable()
        final = recorded_stats(lambda: s.time_ms(run.a.iters))  # served calls after the rounds
        e = run.res["e2e"] = report.e2e_row(times, meds, host)
        run.log(f"eager {e['eager_ms']:.3f} ms, plugin {e['plugin_ms']:.3f} ms "
                f"({e['plugin_speedup']:.3f}x)" + (
                    f", torch.compile {e['compile_ms']:.3f} ms ({e['compile_speedup']:.3f}x)"
                    if e["compile_ms"] else ""))
    return final


def recorded_stats(forwards):
    """stats()' intercepted rows over `forwards()` alone, recorded: stats() counts calls and
    times them only while recording, which the timed forwards do not pay for."""
    import kernel_forge as kf

    kf.reset_stats()
    kf.set_recording(True)
    try:
        forwards()
    finally:
        kf.set_recording(False)
    return [r for r in kf.stats() if r["intercepted"]]


def served_summary(run, final):
    """What forged kernels served in the forwards after the rounds (a kernel the speed guard
    dropped on the way is counted with the eager rows, as the per-op outcomes do)."""
    served = [r for r in final if r["served"] and r["has_kernel"]]
    run.res["served"] = {"calls": sum(r["served"] for r in served), "signatures": len(served),
                         "ops": sorted({r["op"] for r in served}),
                         "dropped_by_speed_guard": sum(1 for r in final if r["served_slower"])}
    if not served:
        n = run.res["warmup"]["inserted"]
        run.note("no call was served by a forged kernel" + (
            f" although {n} kernels were inserted (see the outcomes per op)" if n
            else ": nothing was inserted, so the plugin ran eager everywhere"))


def cold_start(run):
    a = run.a
    per = min(a.cold_start_timeout, (run.left() - 5) / (2 * a.cold_start_runs))
    need = run.res["phases"].get("build", 0) + 10  # a fresh process builds the model too
    if per < need:
        run.note(f"cold start skipped: {max(per, 0):.0f} s per process left under --time-limit, "
                 f"about {need:.0f} s needed")
        return
    with run.phase("cold start"):
        run.res["cold_start"] = coldstart.measure(harness.workload_argv(a), per,
                                                  a.cold_start_runs, log=run.log)


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if os.environ.get("KFORGE_DISABLE"):
        raise SystemExit("KFORGE_DISABLE is set: the plugin would register nothing")
    # the plugin reads its cache folder once, when it loads
    cache = os.path.abspath(a.cache_dir or tempfile.mkdtemp(prefix=f"kforge-e2e-{a.model}-"))
    os.environ["KFORGE_CACHE_DIR"] = cache
    os.environ.pop("KFORGE_TUNE", None)
    import kernel_forge as kf

    ops = [o if "::" in o else f"aten::{o}" for o in a.ops.split(",") if o]
    device = torch.device(a.device)
    res = {"model": a.model, "device": a.device, "tiny": a.tiny, "layers": a.layers,
           "command": "python " + shlex.join(sys.argv if argv is None else [__file__, *argv]),
           "cache_dir": cache,
           "settings": {k: getattr(a, k) for k in (
               "iters", "rounds", "warmup_budget", "iterations", "max_jobs", "min_share", "ops",
               "script_iters", "compile_backend", "time_limit")}}
    base = f"e2e-{a.model}" + ("-coldstart" if a.cold_start else "")  # never over a full run's
    run = Run(a, res, os.path.join(a.out, base), T_START)
    if a.cold_start:
        res["env"] = envinfo.environment(device)
        cold_start(run)
        return 0

    with run.phase("build"):
        s = harness.Setup(a)
    res.update(summary=s.wl.summary, dtype=s.dtype_name, env=envinfo.environment(device))
    ref, eager_before = measure_eager(run, s)
    prof = profile(run, s)
    proposer = a.proposer or ("mixed" if os.environ.get("KFORGE_LLM_URL") else "builtin")
    record = []
    if a.warmup_budget > 0:
        with run.phase("warmup"):
            res["warmup"], record = warm.run_warmup(run, a, ops, proposer)
    else:
        res["warmup"] = warm.summary({"rows": []}, 0, proposer, 0.0)
        run.note(f"no warm-up: the cache in {cache} was served as it was")
    check_plugin(run, s, ref)
    compiled = None if a.no_compile else compile_model(run, s, ref, harness.median(eager_before))
    if a.warmup_budget > 0:
        settle(run, s, harness.median(eager_before))
    final = rounds(run, s, compiled)
    res["e2e"]["eager_before_warmup_ms"] = harness.median(eager_before)
    served_summary(run, final)
    untuned = ("not tuned (no warm-up: --warmup-budget 0)" if a.warmup_budget <= 0 else
               "not tuned (the warm-up stopped early)" if res["warmup"].get("error") else None)
    res["ops"] = report.op_rows(prof, final, res["warmup"]["rows"], record, kf.cache_entries(),
                                n_profile=a.iters, eager_fwd_ms=res["e2e"]["eager_ms"],
                                min_share=a.min_share, max_jobs=a.max_jobs, ops=ops,
                                untuned=untuned)
    res["amdahl_plugin_ms"] = report.amdahl_ms(res["ops"], res["e2e"]["eager_ms"])
    run.write()
    if not a.no_cold_start:
        cold_start(run)
    run.log(f"wrote {run.out_base}.json and .md")
    return 0 if res["check"]["plugin"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
