"""Cold start with a warm cache, in fresh processes (run.py runs this):
- time from process start to the first served kernel: the end of the first forward after which
  kernel_forge.stats() shows served calls, measured from the parent's spawn of the process
  (interpreter start, imports, model build included);
- the per-process cost of the first-use check: the forward holding the first uses of the served
  kernels (normally the first) with KFORGE_VALIDATE=first minus the same forward with
  KFORGE_VALIDATE=off, each in its own fresh process;
- then, in the same fresh process, eager (kernel_forge.disable()) and the plugin in alternating
  rounds: the warm cache's speedup in a process that did not tune;
- and one more fresh process with KFORGE_DISABLE=1 (the plugin loaded but nothing registered:
  torch exactly as without it), timing eager only: disable() still passes every intercepted call
  through the plugin's boxed kernel, so this is the baseline that costs nothing of ours.

The child step, one process:
    python benchmarks/e2e/coldstart.py MODEL [workload options] [--max-forwards N]
prints one line `COLDSTART {json}` with absolute times (time.time()).
"""

import time

T_MAIN = time.time()  # before the heavy imports

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def child(argv):
    sys.path.insert(0, HERE)
    import torch  # noqa: F401

    t_torch = time.time()
    import harness  # finds kernel_forge in a checkout

    import kernel_forge as kf

    t_kf = time.time()

    p = argparse.ArgumentParser()
    harness.add_workload_args(p)
    p.add_argument("--max-forwards", type=int, default=6)
    p.add_argument("--fresh-rounds", type=int, default=4)
    p.add_argument("--fresh-iters", type=int, default=20)
    a = p.parse_args(argv)
    s = harness.Setup(a)
    t_built = time.time()
    forwards = []
    if kf.ops_info()["disabled_by_env"]:  # the no-plugin baseline: eager rounds only
        s.forward()
        s.sync()
        ms = [harness.median(s.time_ms(a.fresh_iters)) for _ in range(2 * a.fresh_rounds)]
        print("COLDSTART " + json.dumps({
            "main": T_MAIN, "torch": t_torch, "kernel_forge": t_kf, "built": t_built,
            "validate": "no plugin", "forwards": forwards,
            "fresh": {"eager": harness.median(ms), "plugin": None, "rounds": len(ms),
                      "iters": a.fresh_iters},
            "cache_entries": 0}), flush=True)
        return
    for _ in range(a.max_forwards):
        t0 = time.perf_counter()
        s.forward()
        s.sync()
        ms = 1e3 * (time.perf_counter() - t0)
        served = sum(r["served"] for r in kf.stats())
        forwards.append({"ms": ms, "end": time.time(), "served": served})
        if sum(1 for f in forwards if f["served"]) >= 3:  # the first served one, then steady ones
            break
    rounds = {"eager": [], "plugin": []}
    for i in range(a.fresh_rounds):  # the order alternates, so that drift hits both
        for name in ("eager", "plugin")[::1 if i % 2 == 0 else -1]:
            (kf.disable if name == "eager" else kf.enable)()
            rounds[name].append(harness.median(s.time_ms(a.fresh_iters)))
    kf.enable()
    fresh = {k: harness.median(v) for k, v in rounds.items()}
    fresh.update(rounds=a.fresh_rounds, iters=a.fresh_iters)
    # kernels this process did not serve every call of: refused by the first-use check, or by
    # the speed guard (slower here than eager), or partly (a fallback)
    unserved = [{"signature": r["signature"], "calls": r["calls"], "served": r["served"],
                 "slower": bool(r.get("served_slower"))}
                for r in kf.stats() if r["has_kernel"] and r["served"] < r["calls"]]
    print("COLDSTART " + json.dumps({
        "main": T_MAIN, "torch": t_torch, "kernel_forge": t_kf, "built": t_built,
        "validate": kf.ops_info()["validate"], "forwards": forwards, "fresh": fresh,
        "cache_entries": len(kf.cache_entries()), "unserved": unserved}), flush=True)


def summarize(rec: dict, t_spawn: float) -> dict:
    """Times relative to the spawn, from one child's record."""
    fw = rec["forwards"]
    first_served = next((i for i, f in enumerate(fw) if f["served"]), None)
    steady = [f["ms"] for f in fw[1:]]
    return {
        "validate": rec["validate"],
        "to_interpreter_s": rec["main"] - t_spawn,
        "to_torch_imported_s": rec["torch"] - t_spawn,
        "to_kernel_forge_loaded_s": rec["kernel_forge"] - t_spawn,
        "to_model_built_s": rec["built"] - t_spawn,
        "to_first_served_s": None if first_served is None else fw[first_served]["end"] - t_spawn,
        "forwards_until_served": None if first_served is None else first_served + 1,
        "first_forward_ms": fw[0]["ms"] if fw else None,
        "steady_forward_ms": min(steady) if steady else None,
        "forward_ms": [round(f["ms"], 3) for f in fw],
        "cache_entries": rec["cache_entries"],
        "fresh_eager_ms": rec["fresh"]["eager"],
        "fresh_plugin_ms": rec["fresh"]["plugin"],
        "unserved": rec.get("unserved", []),
    }


def measure(workload_argv: list[str], timeout: float, runs: int = 1, log=print) -> dict:
    """Both modes, `runs` fresh processes each (the median run by first forward is kept), and
    one process without the plugin's registrations."""
    modes = {}
    for mode in ("first", "off", "none"):
        got = []
        for _ in range(runs if mode != "none" else 1):
            env = dict(os.environ, KFORGE_VALIDATE=mode if mode != "none" else "off")
            env.pop("KFORGE_TUNE", None)
            if mode == "none":
                env["KFORGE_DISABLE"] = "1"
            t_spawn = time.time()
            try:
                p = subprocess.run([sys.executable, os.path.abspath(__file__), *workload_argv],
                                   env=env, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                got.append({"error": f"timed out after {timeout:.0f} s"})
                continue
            line = next((ln for ln in p.stdout.splitlines() if ln.startswith("COLDSTART ")), None)
            if p.returncode != 0 or line is None:
                got.append({"error": f"exit {p.returncode}: {p.stderr.strip()[-600:]}"})
                continue
            got.append(summarize(json.loads(line[len("COLDSTART "):]), t_spawn))
        ok = sorted((g for g in got if "error" not in g),
                    key=lambda g: g["first_forward_ms"] or 0)
        modes[mode] = ok[len(ok) // 2] if ok else got[-1]
        log(f"  {'KFORGE_DISABLE=1' if mode == 'none' else 'KFORGE_VALIDATE=' + mode}: "
            f"{describe(modes[mode])}")
    first, off = modes["first"], modes["off"]
    out = {"modes": modes, "runs": runs, "validation_cost_ms": None,
           "note": "times from the parent's spawn of the process; the first forward includes "
                   "loading the cached kernels and the libraries' lazy initialization"}
    none = modes["none"]
    if "error" not in none and "error" not in first and first.get("fresh_plugin_ms"):
        # across processes: noisier than the alternating rounds within one
        out["no_plugin_eager_ms"] = none["fresh_eager_ms"]
        out["plugin_vs_no_plugin"] = none["fresh_eager_ms"] / first["fresh_plugin_ms"]
    if "error" not in first and "error" not in off:
        k = first["forwards_until_served"]  # the forward holding the first uses (normally 1)
        if k is None:
            out["note"] += "; no kernel was served, so nothing was validated"
        elif len(off["forward_ms"]) >= k:
            out["validation_cost_ms"] = first["forward_ms"][k - 1] - off["forward_ms"][k - 1]
            out["validation_forward"] = k
    return out


def rec_is_baseline(m: dict) -> bool:
    return m.get("validate") == "no plugin"


def describe(m: dict) -> str:
    if "error" in m:
        return m["error"]
    if rec_is_baseline(m):
        return (f"no plugin registrations: eager {m['fresh_eager_ms']:.3f} ms "
                f"(model built {m['to_model_built_s']:.2f} s after spawn)")
    served = (f"first served kernel {m['to_first_served_s']:.2f} s after spawn"
              if m["to_first_served_s"] is not None else "no kernel served")
    out = (f"{served}, first forward {m['first_forward_ms']:.1f} ms, steady "
           f"{m['steady_forward_ms'] or 0:.2f} ms")
    if m.get("fresh_eager_ms") and m.get("fresh_plugin_ms"):
        out += (f"; then eager {m['fresh_eager_ms']:.3f} ms vs plugin {m['fresh_plugin_ms']:.3f} ms "
                f"({m['fresh_eager_ms'] / m['fresh_plugin_ms']:.3f}x)")
    for u in m.get("unserved") or []:
        out += (f"; not served {u['calls'] - u['served']} of {u['calls']} calls of "
                f"{u['signature'][:60]}" + (" (slower here than eager)" if u["slower"] else ""))
    return out


if __name__ == "__main__":
    child(sys.argv[1:])
