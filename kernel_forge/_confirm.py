"""The online tuner's confirmation of a search's winner before it lands in the cache.

The worker times candidates on a machine the model is using at the same time, so a win it
measured may be noise. Before the winner is inserted where the model loads kernels from, it is
timed again here, in a child process (`python -m kernel_forge._confirm JOB_DIR STAGING`) that
serves it from the staging cache the worker inserted it into (KFORGE_CACHE_DIR=STAGING, first
use checked against eager as always): k rounds of m pairs of calls, one eager (this thread
bypassing the plugin) and one served, the pair's order alternating (ABAB, BABA, ...), so that
a change of load hits both alike; each round's ratio is the served median over the eager one. The winner is confirmed
only if the median of the rounds' ratios (served / eager) wins by the margin and their spread
(interquartile range / median) is at most the bound (verdict()).

The tuner starts the child when it starts the worker, so that its imports overlap the search:
the child makes its CUDA context for a CUDA job (warm_device), prints {"event": "loaded"} and
waits for a line on stdin ("check": the winner is in
the staging cache; end of input: nothing to confirm). It then serves its first call (the
first-use check), prints {"event": "ready"} and waits for another line: the tuner sends it when
the model's calls pause (a quiet gap) or after a short wait, and the child measures at once;
before each later round it prints {"event": "gate"} and waits for a line the same way (end of
input: it no longer waits). Its last line is the outcome as JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import sys


def spread(xs: list[float]) -> float:
    """Interquartile range / median (0 for fewer than 2 values)."""
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    med = statistics.median(xs)
    return (q[2] - q[0]) / med if med > 0 else float("inf")


def verdict(ratios: list[float], margin: float, max_spread: float) -> tuple[bool, str]:
    """(confirmed, why) for per-round served/eager ratios: the median must be at most
    1 - margin and the spread at most max_spread."""
    if not ratios or any(not (r > 0) for r in ratios):
        return False, "no valid timing rounds"
    med, sp = statistics.median(ratios), spread(ratios)
    if sp > max_spread:
        return False, (f"timings too spread to trust: IQR/median {sp:.2f} > {max_spread:.2f} "
                       f"over {len(ratios)} rounds (median ratio {med:.3f})")
    if med > 1.0 - margin:
        return False, (f"the win did not hold: served/eager {med:.3f} over {len(ratios)} "
                       f"interleaved rounds, needs <= {1.0 - margin:.3f}")
    return True, f"served/eager {med:.3f}, spread {sp:.2f} over {len(ratios)} rounds"


def measure(fn, device, set_bypass, rounds: int, reps: int, before_round=None) -> list[float]:
    """Per-round served/eager ratios: each round `reps` pairs of calls, one eager (this thread
    bypassing the plugin) and one served, the pair's order alternating (ABAB, BABA, ...), so
    that load that comes and goes on the machine hits both sides alike; the ratio of the two
    medians. `before_round(r)` is called before every round but the first (the tuner's gate)."""
    from ._verify import _once_us

    def eager():
        set_bypass(1)
        try:
            return _once_us(fn, device)
        finally:
            set_bypass(0)

    fn()
    eager()
    ratios = []
    for r in range(rounds):
        if r and before_round:
            before_round(r)
        es, ss = [], []
        for i in range(reps):
            if (i + r) % 2 == 0:
                es.append(eager())
                ss.append(_once_us(fn, device))
            else:
                ss.append(_once_us(fn, device))
                es.append(eager())
        e = statistics.median(es)
        ratios.append(statistics.median(ss) / e if e > 0 else float("inf"))
    return ratios


def warm_device(job_dir: str) -> str:
    """For a CUDA job, make this process's CUDA context now, while the worker searches, and
    not after its winner is in (the first CUDA call costs about a second). Returns the device
    made ready ("cpu": nothing to do; "" when it could not be: the later calls try again and
    fail with the reason). job.json is untrusted: only its backend and device index are read."""
    try:
        import torch

        with open(os.path.join(job_dir, "job.json")) as f:
            job = json.load(f)
        if job.get("backend") != "nvrtc":
            return "cpu"
        dev = torch.device("cuda", int(job.get("device_index") or 0))
        torch.zeros(1, device=dev)
        torch.cuda.synchronize(dev)
        return str(dev)
    except Exception:
        return ""


def main(argv) -> int:
    job_dir = argv[1]
    out = {"confirmed": False}
    try:
        os.nice(int(os.environ.get("KFORGE_CONFIRM_NICE") or 0))  # beside the model: yield to it
    except (OSError, ValueError):
        pass
    try:
        import torch

        import kernel_forge as kf
        from . import _jobs, _native

        dev = warm_device(job_dir)
        print(json.dumps({"event": "loaded", "device": dev}), flush=True)
        if not sys.stdin.readline().strip():
            return 0  # the search found nothing to confirm
        with open(os.path.join(job_dir, "job.json")) as f:
            job = json.load(f)
        call = torch.load(os.path.join(job_dir, "confirm.pt"), weights_only=True)  # untrusted
        fn = _jobs.resolve(call["op"])
        # the call's tensors as the tuner saved them (host copies), on the job's device
        on = (torch.device("cuda", int(job.get("device_index", 0))) if job.get("backend") == "nvrtc"
              else torch.device("cpu"))
        args = _jobs.device_exact(call["args"], on)
        kwargs = _jobs.device_exact(call["kwargs"], on)
        pos, kw = _jobs.clone_written(fn, args, kwargs)
        devs = _jobs.tensors_of(list(pos) + list(kw.values()))
        device = devs[0].device
        kf.reload_cache()
        fn(*pos, **kw)  # first use: checked against eager in this process
        row = next((r for r in kf.stats() if r["key"] == job["key"]), None)
        if not row or row["served"] < 1:
            why = (row or {}).get("stopped") or "the entry was not attached"
            out["reason"] = f"not served in the confirmation process ({why})"
            print(json.dumps(out), flush=True)
            return 0
        served0 = row["served"]
        print(json.dumps({"event": "ready"}), flush=True)
        sys.stdin.readline()  # the tuner's go: a quiet moment, or its wait ran out
        more = [True]

        def gate(r):  # each later round waits for a go too; end of input: no more waits
            if more[0]:
                print(json.dumps({"event": "gate", "round": r}), flush=True)
                more[0] = bool(sys.stdin.readline())
        rounds = int(call.get("rounds", 7))
        eager_us = max(float(job.get("eager_us") or 1.0), 0.1)
        reps = max(5, min(200, int(call.get("round_us", 20000) / eager_us)))
        ratios = measure(lambda: fn(*pos, **kw), device, _native.lib().kf_set_thread_bypass,
                         rounds, reps, gate)
        row = next((r for r in kf.stats() if r["key"] == job["key"]), {})
        if row.get("served", 0) < served0 + rounds * reps:
            out["reason"] = (f"the kernel stopped being served while it was timed "
                             f"({row.get('stopped') or 'fell back'})")
        else:
            ok, why = verdict(ratios, float(call["margin"]), float(call["max_spread"]))
            out.update(confirmed=ok, reason=why)
        out.update(ratios=ratios, ratio=statistics.median(ratios), spread=spread(ratios),
                   reps=reps)
    except Exception as e:  # any failure refuses the candidate, with the reason
        out["reason"] = f"confirmation failed: {type(e).__name__}: {e}"
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
