"""Tuning hot signatures of a running process: shared by online tuning (KFORGE_TUNE=1) and by
`kforge warmup`.

The plugin counts and times every intercepted call. A signature that is hot (enough calls and
share of the recorded time), servable and without a kernel becomes a job: the plugin copies its
next real calls (kf_capture_request; torch_ext copies the arguments), this module writes the job
folder from them and runs the forge worker, a separate process. The model keeps running on eager
meanwhile, and picks the winner up from the cache when it lands (KFORGE_RELOAD_MS).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time

import torch

from . import _jobs, _native
from ._native import KernelForgeError

log = logging.getLogger("kernel_forge")


def _env_num(name: str, default: float, lo: float = 0.0) -> float:
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        x = float(v)
    except ValueError:
        log.warning("%s=%r is not a number; using %g", name, v, default)
        return default
    if x < lo:
        log.warning("%s=%r is below %g; using %g", name, v, lo, default)
        return default
    return x


def settings() -> dict:
    """The online-tuning knobs (README, "Tuning")."""
    return {
        "min_calls": int(_env_num("KFORGE_TUNE_MIN_CALLS", 20, 1)),
        "min_share": _env_num("KFORGE_TUNE_MIN_SHARE", 0.02),
        "iterations": int(_env_num("KFORGE_TUNE_ITERATIONS", 50, 1)),
        "captures": int(_env_num("KFORGE_TUNE_CAPTURES", 3, 1)),
        "interval_s": _env_num("KFORGE_TUNE_INTERVAL", 2.0, 0.05),
        "margin": _env_num("KFORGE_TUNE_MARGIN", 0.03, -100.0),
    }


def take_captures(key: str, n_tensors: int) -> list[list[torch.Tensor]]:
    """Real calls the plugin copied for `key`, as lists of tensor arguments."""
    flat = torch.ops.kforge.take_captures(_signed(int(key, 16)))
    if n_tensors <= 0:
        return []
    return [list(flat[i:i + n_tensors]) for i in range(0, len(flat) - n_tensors + 1, n_tensors)]


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def request_captures(key: str, n: int) -> None:
    lib = _native.lib()
    code = lib.kf_capture_request(_native.runtime(), int(key, 16), int(n))
    if code:
        raise KernelForgeError(f"capture request for {key}: {_native.errmsg()}")


def write_job_from_captures(key: str, captures: list[list[torch.Tensor]], search: dict,
                            random_inputs: int = 3) -> str:
    """A job folder for `key` from copied real calls; returns its path."""
    info, args = _jobs.describe(key)
    _jobs.check_tunable(info, args)
    if not captures:
        raise _jobs.NotTunable(f"{info['signature']}: no real call was copied")
    fn = _jobs.resolve(info["op"])
    calls = [_jobs.call_from_args(fn, args, c) for c in captures]
    job_dir = _jobs.new_job_dir(info["op"], key)
    _jobs.write_job(job_dir, key, calls, recorded=[True] * len(calls),
                    random_inputs=random_inputs, search=search)
    return job_dir


def n_tensor_args(key: str) -> int:
    """Tensors per captured call: tensor arguments and tensor list elements (_jobs.tensor_args)."""
    _, args = _jobs.describe(key)
    return len(_jobs.tensor_args(args))


def bytes_moved(key: str) -> int:
    """Bytes a call of this signature must read and write (_jobs.bytes_moved)."""
    return _jobs.bytes_moved(*_jobs.describe(key))


def priority(row: dict, bandwidth_gbs: float | None) -> float:
    """docs/architecture.md: time share x headroom to the roofline (Amdahl): the recorded time of the
    signature times the fraction of its eager time a perfect kernel would save."""
    nbytes = row.get("bytes_moved") or 0
    if not bandwidth_gbs or not nbytes or row.get("eager_us", -1) <= 0:
        return row["time_ms"]
    roofline_us = nbytes / (bandwidth_gbs * 1e3)
    return row["time_ms"] * max(0.0, 1.0 - roofline_us / row["eager_us"])


# A shape served by a family kernel gets a job of its own only when the family kernel's time
# there is more than this many times the roofline time of the bytes it moves (README, "Shape
# families"): near the roofline a kernel of its own could not win much.
FAMILY_FAR_FROM_ROOFLINE = 2.0


def family_far_from_roofline(row: dict, bandwidth_gbs: float | None) -> bool:
    """Whether a row served by a shape family deserves its own job: its served time per call
    is over FAMILY_FAR_FROM_ROOFLINE x the roofline (bytes_moved at bandwidth_gbs). Without a
    bandwidth, bytes or a served sample nothing can be said, and the family keeps the row."""
    nbytes = row.get("bytes_moved") or 0
    served_us = row.get("served_us", -1)
    if not row.get("family") or not bandwidth_gbs or not nbytes or served_us <= 0:
        return False
    return served_us > FAMILY_FAR_FROM_ROOFLINE * nbytes / (bandwidth_gbs * 1e3)


def hot_candidates(rows: list[dict], min_calls: int, min_share: float, skip: set,
                   bandwidth_gbs: float | None = None) -> list[dict]:
    """Intercepted, servable signatures without a kernel (or served by a shape family far from
    its roofline there: family_far_from_roofline), hot enough, in priority order (rows with
    "bytes_moved" and a bandwidth: time x headroom to the roofline; else time). Rows marked
    "untunable" never take a slot; "share" is the share of the tunable time (steady_rows)."""
    out = [r for r in rows if r["intercepted"] and r["servable"]
           and (not r["has_kernel"] or family_far_from_roofline(r, bandwidth_gbs))
           and not r.get("untunable") and r["key"] not in skip and r["calls"] >= min_calls
           and r["share"] >= min_share]
    out.sort(key=lambda r: (-priority(r, bandwidth_gbs), r["signature"]))
    return out


def untunable_reason(row: dict) -> str | None:
    """Why a job for this row could never be written or served (None: it can): an argument on
    another device, a dtype or argument kind a kernel cannot take, ... (_jobs.check_tunable)."""
    if not row["intercepted"]:
        return "not intercepted"
    if not row["servable"]:
        return "arguments a kernel cannot take exactly"
    try:
        _jobs.check_tunable(*_jobs.describe(row["key"]))
    except KernelForgeError as e:
        return str(e).split(": ", 1)[-1]
    return None


def mark_untunable(rows: list[dict], cache: dict | None = None) -> None:
    """Set row["untunable"] (a reason, or None) on every intercepted row without a kernel;
    `cache` (key -> reason) spares the same question at every look of the online tuner."""
    for r in rows:
        if not r["intercepted"] or r["has_kernel"]:
            continue
        if cache is not None and r["key"] in cache:
            r["untunable"] = cache[r["key"]]
            continue
        r["untunable"] = untunable_reason(r)
        if cache is not None:
            cache[r["key"]] = r["untunable"]


def steady_rows(rows: list[dict], window: dict | None) -> tuple[list[dict], list[dict]]:
    """The rows as the work a script repeats sees them: with `window` (key -> {"time_ms",
    "calls"}, the time recorded while that work ran), each row's time and calls are the
    window's, and rows the window never saw are set apart as setup; without one, the whole
    recording. "share" is then recomputed over the tunable rows, so one-time work and what can
    never be tuned (a copy from the CPU, ...) do not dilute --min-share. Returns (rows, setup)."""
    steady, setup = [], []
    for r in rows:
        r = dict(r)
        if window is not None and r["intercepted"]:
            w = window.get(r["key"])
            if not w or w["calls"] <= 0:
                r["setup"] = True
                setup.append(r)
                continue
            r["time_ms"], r["calls"] = w["time_ms"], w["calls"]
        steady.append(r)
    total = sum(r["time_ms"] for r in steady if r["intercepted"] and not r.get("untunable"))
    for r in steady:
        r["share"] = (r["time_ms"] / total if total > 0 and r["intercepted"] and not r.get("untunable")
                      else 0.0)
    return steady, setup


def stats_delta(now: list[dict], before: dict) -> dict:
    """key -> {"time_ms", "calls"} recorded since the snapshot `before` (snapshot(rows))."""
    out = {}
    for r in now:
        if not r["intercepted"]:
            continue
        t0, c0 = before.get(r["key"], (0.0, 0))
        if r["calls"] > c0:
            out[r["key"]] = {"time_ms": max(0.0, r["time_ms"] - t0), "calls": r["calls"] - c0}
    return out


def snapshot(rows: list[dict]) -> dict:
    return {r["key"]: (r["time_ms"], r["calls"]) for r in rows if r["intercepted"]}


def add_bytes_moved(rows: list[dict]) -> None:
    """Fill row["bytes_moved"] for the intercepted, servable rows (others are never tuned)."""
    for r in rows:
        if r["intercepted"] and r["servable"]:
            try:
                r["bytes_moved"] = bytes_moved(r["key"])
            except KernelForgeError:
                pass


def memory_shortfall(row: dict, captures: int) -> str | None:
    """Why a CUDA signature is too big to tune beside the model (None: it is not): its captures,
    the copies write_job makes of a call, the random inputs and the outputs live in this process,
    about (captures + 3) x the bytes a call moves; they may take at most a quarter of the free
    memory (the timing buffers take at most _jobs.MEASURE_FREE_FRACTION besides)."""
    if row.get("device") != "cuda":
        return None
    need = (captures + 3) * (row.get("bytes_moved") or 0)
    try:
        free, _ = _jobs.cuda_memory(torch.device("cuda"))
    except Exception as e:  # no answer from the device: do not risk it
        return f"free GPU memory unknown ({e})"
    if need > free // 4:
        return (f"copying and measuring its calls takes about {need >> 20} MiB, more than a quarter "
                f"of the {free >> 20} MiB free on the GPU")
    return None


class OnlineTuner(threading.Thread):
    """KFORGE_TUNE=1: one background thread per process, one worker process at a time. Nothing on
    the model's path waits for it; its own torch calls bypass the plugin (kf_set_thread_bypass)."""

    def __init__(self):
        super().__init__(name="kforge-tuner", daemon=True)
        self.cfg = settings()
        self.done: set[str] = set()
        self.procs: list = []
        self.stop = threading.Event()
        self.results: list[dict] = []
        self.later: dict[str, float] = {}  # key -> when to look again (another process tunes it)
        self.busy = False  # a job is being prepared, searched or published
        atexit.register(self.shutdown)

    def shutdown(self):
        self.stop.set()
        for p in list(self.procs):
            p.kill()

    def run(self):
        from . import cache_dir, reload_cache, stats

        search = {"iterations": self.cfg["iterations"], "margin": self.cfg["margin"],
                  "proposer": "builtin", "cache_dir": cache_dir()}
        before, last, reasons = {}, {}, {}
        while not self.stop.wait(self.cfg["interval_s"]):
            try:
                # the time since the last look ranks, not since the start, and only what was also
                # called in the look before: a script's one-time setup (weights copied to the GPU,
                # casts) is never ranked, and the repeated work is
                now = stats()
                window, before = stats_delta(now, before), snapshot(now)
                repeated = {k: w for k, w in window.items() if k in last}
                last = window
                mark_untunable(now, reasons)
                rows, _ = steady_rows(now, repeated)
                total = {r["key"]: r["calls"] for r in now}
                for r in rows:  # "hot" still counts every call so far
                    r["calls"] = total.get(r["key"], r["calls"])
                t = time.monotonic()
                skip = self.done | {k for k, when in self.later.items() if when > t}
                # a hot shape served by a family may be far from its roofline: measured below
                family = [dict(r, has_kernel=False) for r in rows if r.get("family")]
                if not hot_candidates(rows + family, self.cfg["min_calls"], self.cfg["min_share"],
                                      skip):
                    continue  # nothing hot: no measurement on the device at all
                add_bytes_moved(rows)
                device = next((r["device"] for r in rows if r["intercepted"]), "cpu")
                with _jobs.bypass():
                    bw = _jobs.copy_bandwidth_gbs(
                        torch.device("cuda") if device == "cuda" else torch.device("cpu"), 1 << 26)
                cands = hot_candidates(rows, self.cfg["min_calls"], self.cfg["min_share"],
                                       skip, bw)
                self.busy = True
                for r in cands:  # the hottest one this process may search (fleet: not leased)
                    self.done.add(r["key"])
                    if self.tune_fleet(r, search) != "later":
                        break
                    self.done.discard(r["key"])
                    self.later[r["key"]] = time.monotonic() + 2 * self.cfg["interval_s"]
                reload_cache()
            except Exception as e:  # the user's process must never be harmed by tuning
                log.warning("online tuning: %s", e)
            finally:
                self.busy = False

    def tune_fleet(self, row: dict, search: dict) -> str:
        """With a fleet cache (KFORGE_REMOTE_CACHE): its entry if published, else a search under
        the signature's lease, published when inserted; "later" while another process holds the
        lease (the fetcher installs its winner; a crashed tuner's lease expires)."""
        from . import _remote

        remote = _remote.get()
        ck = _remote.cache_key_of(row["key"]) if remote is not None else None
        if ck is None:
            self.tune_one(row, search)
            return "tuned"
        state, lease = _remote.claim(remote, search["cache_dir"], ck)
        if state == "fleet":
            log.info("online tuning: %s: from the fleet cache", row["signature"])
            return "fleet"
        if state == "none":
            log.info("online tuning: %s: not searched: %s in the fleet", row["signature"], lease)
            return "none"
        if state == "held":
            log.info("online tuning: %s is being tuned by %s; waiting for its entry",
                     row["signature"], lease)
            return "later"
        try:
            result = self.tune_one(row, search)
            if result:
                _remote.publish(result, search["cache_dir"], ck)
        finally:
            if lease:
                lease.release()
        return "tuned"

    def tune_one(self, row: dict, search: dict) -> dict | None:
        key = row["key"]
        short = memory_shortfall(row, self.cfg["captures"])
        if short:
            log.info("online tuning: %s skipped: %s", row["signature"], short)
            return None
        n = n_tensor_args(key)
        request_captures(key, self.cfg["captures"])
        deadline = time.monotonic() + 60
        captures = []
        while time.monotonic() < deadline and not self.stop.is_set():
            captures += take_captures(key, n)
            if len(captures) >= self.cfg["captures"]:
                break
            time.sleep(0.05)
        if not captures:
            log.info("online tuning: %s was not called again; skipped", row["signature"])
            return None
        with _jobs.bypass():
            job_dir = write_job_from_captures(key, captures, search)
        log.info("online tuning: %s (%.1f%% of recorded time): job %s", row["signature"],
                 100 * row["share"], job_dir)
        result = _jobs.run_worker(job_dir, proc_holder=self.procs)
        self.results.append(result)
        log.info("online tuning: %s: %s (eager %.1f us, best %s us)", row["signature"],
                 result["status"], result["eager_us"],
                 f"{result['best_us']:.1f}" if result.get("best_us") else "-")
        return result


_online = None


def start_online() -> OnlineTuner:
    global _online
    if _online is None:
        _online = OnlineTuner()
        _online.start()
    return _online
