"""Phase bookkeeping for run.py: progress lines with the elapsed time, each phase's wall time,
the time left under --time-limit, hard limits, and the result rewritten after every phase (so a
run stopped early leaves what it had measured)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import time

import report


class PhaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds, what):
    """Raise PhaseTimeout in this (main) thread after `seconds`. Child processes the phase started
    are killed by their own cleanup (subprocess.run, the warm-up's worker loop)."""
    if not seconds or math.isinf(seconds):
        yield
        return

    def on_alarm(signum, frame):
        raise PhaseTimeout(f"{what} did not finish in {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1.0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Run:
    def __init__(self, args, res: dict, out_base: str, t0: float):
        """`args`: run.py's options (time_limit among them); `res`: the result being built."""
        self.a, self.res, self.out_base, self.t0 = args, res, out_base, t0
        self.limit_s = args.time_limit
        res.setdefault("phases", {})
        res.setdefault("notes", [])

    def log(self, msg: str):
        print(f"[{time.monotonic() - self.t0:6.1f} s] {msg}", flush=True)

    def note(self, msg: str):
        """A remark for the report, printed too."""
        self.res["notes"].append(msg)
        self.log(msg)

    def left(self) -> float:
        return self.limit_s - (time.monotonic() - self.t0) if self.limit_s else math.inf

    @contextlib.contextmanager
    def phase(self, name: str):
        self.log(f"{name} ...")
        t = time.monotonic()
        try:
            yield
        finally:
            self.res["phases"][name] = time.monotonic() - t
            self.log(f"{name} done in {self.res['phases'][name]:.1f} s")
            self.write()

    def write(self):
        with open(self.out_base + ".json.tmp", "w") as f:
            json.dump(self.res, f, indent=1)
        os.replace(self.out_base + ".json.tmp", self.out_base + ".json")
        with open(self.out_base + ".md", "w") as f:
            f.write(report.markdown(self.res) + "\n")
