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
import shutil
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
        # bounded interference (README, "Online tuning")
        "duty": min(1.0, _env_num("KFORGE_TUNE_DUTY", 0.1, 0.001)),
        # a token bucket of this many seconds of work: the first searches need not wait for
        # duty accrued from zero; over any stretch T the workers work at most burst + duty x T
        "burst_s": _env_num("KFORGE_TUNE_BURST", 5.0, 0.0),
        "cores": int(_env_num("KFORGE_TUNE_CORES", 1, 0)),
        "nice": int(_env_num("KFORGE_TUNE_NICE", 10, 0)),
        "ramp": bool(int(_env_num("KFORGE_TUNE_RAMP", 1, 0))),
        # the confirmation before a winner lands (kernel_forge/_confirm.py)
        "confirm_rounds": int(_env_num("KFORGE_TUNE_CONFIRM_ROUNDS", 7, 1)),
        "max_spread": _env_num("KFORGE_TUNE_MAX_SPREAD", 0.25, 0.0),
        # timing (the worker's candidates, the confirmation's rounds, the job's eager time)
        # waits up to quiet_wait_s for quiet_ms without the model's calls; 0: never waits
        "quiet_wait_s": _env_num("KFORGE_TUNE_QUIET_WAIT", 2.0, 0.0),
        "quiet_ms": _env_num("KFORGE_TUNE_QUIET_MS", 50.0, 1.0),
        "retries": int(_env_num("KFORGE_TUNE_RETRIES", 2, 0)),
        # recorded fusable chains are tuned too (their kernels land without the confirmation:
        # the served process's chain speed guard judges them in place)
        "chains": bool(int(_env_num("KFORGE_TUNE_CHAINS", 1, 0))),
        # once kernels landed, the model's next forwards are timed with every kernel, chain
        # kernels off and nothing served (kernel_forge/_modelcheck.py), and what loses goes
        "check": bool(int(_env_num("KFORGE_TUNE_CHECK", 1, 0))),
    }


class NotCalled(Exception):
    """A hot signature's next calls did not come (_capture)."""


class Stopped(Exception):
    """The tuner was shut down: no new worker or confirmation is started (_search)."""


class _Procs(list):
    """The tuner's child processes; one added once the tuner is stopped is killed at once (a
    search that passed _search's check just before shutdown())."""

    def __init__(self, stop: threading.Event):
        super().__init__()
        self.stop = stop

    def append(self, p):
        super().append(p)
        if self.stop.is_set():
            p.kill()


def take_captures(key: str, n_tensors: int) -> list[list[torch.Tensor]]:
    """Real calls the plugin copied for `key`, as lists of tensor arguments."""
    flat = torch.ops.kforge.take_captures(_signed(int(key, 16)))
    if n_tensors <= 0:
        return []
    return [list(flat[i:i + n_tensors]) for i in range(0, len(flat) - n_tensors + 1, n_tensors)]


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def request_captures(key: str, n: int) -> None:
    _native.intercept()  # the capture run's ops, with or without kernels
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
    try:
        _jobs.write_job(job_dir, key, calls, recorded=[True] * len(calls),
                        random_inputs=random_inputs, search=search)
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)  # no half-written folder for the UI to list
        raise
    return job_dir


def n_tensor_args(key: str) -> int:
    """Tensors per captured call: tensor arguments and tensor list elements (_jobs.tensor_args)."""
    _, args = _jobs.describe(key)
    return len(_jobs.tensor_args(args))


# No kernel, however small its work, runs in less than this (launch and the smallest grid, as
# the worker times it): a 4 us op on a GPU has little to gain whatever its roofline says.
LAUNCH_FLOOR_US = {"cuda": 2.5, "cpu": 0.2}


def on_gpu(device: str | None) -> bool:
    """Whether a row's device ("cuda:0", as kf.stats() names it, or "cpu") is a GPU."""
    return (device or "cpu").split(":")[0] == "cuda"


def bandwidth_of(row: dict, bandwidth_gbs) -> float | None:
    """The copy bandwidth of the row's own device: `bandwidth_gbs` maps devices to GB/s (the
    recording measures each device a script ran ops on: a GPU model's script runs CPU ops too, and
    a GPU row ranked against the host's bandwidth looks already at its roofline); a number is
    every row's."""
    if isinstance(bandwidth_gbs, dict):
        return bandwidth_gbs.get(row.get("device"))
    return bandwidth_gbs


def priority(row: dict, bandwidth_gbs) -> float:
    """docs/architecture.md: time share x headroom to the roofline (Amdahl): the recorded time of the
    signature times the fraction of its eager time a perfect kernel would save, that kernel taking
    the roofline time of its bytes or the device's launch floor, whichever is longer.
    `bandwidth_gbs`: see bandwidth_of."""
    bandwidth_gbs = bandwidth_of(row, bandwidth_gbs)
    nbytes = row.get("bytes_moved") or 0
    eager_us = row.get("eager_us", -1) or -1
    if eager_us <= 0:
        return row["time_ms"]
    best_us = LAUNCH_FLOOR_US.get(row.get("device", "").split(":")[0], 0.0)
    if bandwidth_gbs and nbytes:
        best_us = max(best_us, nbytes / (bandwidth_gbs * 1e3))
    return row["time_ms"] * max(0.0, 1.0 - best_us / eager_us)


def rows_by_device(rows: list[dict]) -> dict[str, list[dict]]:
    """The tunable rows with bytes (those ranked against a copy bandwidth) per device, hottest
    first; the device of the hottest row first."""
    out: dict[str, list[dict]] = {}
    for r in sorted((r for r in rows if r["intercepted"] and r.get("bytes_moved")
                     and not r.get("untunable")), key=lambda r: -r["time_ms"]):
        out.setdefault(r["device"], []).append(r)
    return out


def workload_devices(rows: list[dict]) -> list[str]:
    """The devices whose copy bandwidth the ranking needs, the hottest row's first."""
    return list(rows_by_device(rows))


def device_bandwidths(rows: list[dict]) -> dict[str, float]:
    """Each workload device's copy bandwidth, measured on that device: the rows name it as
    "cuda:0", which torch.device reads as the GPU (ranking a GPU's rows against the host's
    copy made its big ops look already at their roofline)."""
    with _jobs.bypass():
        return {d: _jobs.copy_bandwidth_gbs(torch.device(d), 1 << 26) for d in workload_devices(rows)}


def chain_priority(chain: dict, rows_by_key: dict, bandwidth_gbs) -> float:
    """priority() for a chain (chain_candidates' row): its members' time x the headroom of one
    kernel that moves the members' bytes less their reads of earlier members' outputs (it holds
    those in registers; it still writes every member's output). A chain of ops that each run at
    copy speed has little: a layer scale then a residual add saves one read of five. Without
    every member's bytes: its time, as before bytes were known."""
    keys, eager_us = chain["keys"], chain.get("eager_us") or 0.0
    members = [rows_by_key.get(k) for k in keys]
    bandwidth_gbs = bandwidth_of(members[0] or {}, bandwidth_gbs) if members else None
    if (not bandwidth_gbs or eager_us <= 0 or len(members) != len(chain["spec"]["members"])
            or any(m is None or not m.get("bytes_moved") or m.get("out0_bytes") is None
                   for m in members)):
        return chain["time_ms"]
    nbytes = sum(m["bytes_moved"] for m in members)
    for spec_m in chain["spec"]["members"]:
        for ref in spec_m["inputs"]:
            if ref[0] == "member":
                nbytes -= members[ref[1]]["out0_bytes"]
    best_us = max(LAUNCH_FLOOR_US.get(members[0].get("device", "").split(":")[0], 0.0),
                  max(nbytes, 0) / (bandwidth_gbs * 1e3))
    return chain["time_ms"] * max(0.0, 1.0 - best_us / eager_us)


# A shape served by a family kernel gets a job of its own only when the family kernel's time
# there is more than this many times the roofline time of the bytes it moves (README, "Shape
# families"): near the roofline a kernel of its own could not win much.
FAMILY_FAR_FROM_ROOFLINE = 2.0


def family_far_from_roofline(row: dict, bandwidth_gbs) -> bool:
    """Whether a row served by a shape family deserves its own job: its served time per call
    is over FAMILY_FAR_FROM_ROOFLINE x the roofline (bytes_moved at bandwidth_gbs). Without a
    bandwidth, bytes or a served sample nothing can be said, and the family keeps the row."""
    nbytes = row.get("bytes_moved") or 0
    served_us = row.get("served_us", -1)
    bandwidth_gbs = bandwidth_of(row, bandwidth_gbs)
    if not row.get("family") or not bandwidth_gbs or not nbytes or served_us <= 0:
        return False
    return served_us > FAMILY_FAR_FROM_ROOFLINE * nbytes / (bandwidth_gbs * 1e3)


def hot_candidates(rows: list[dict], min_calls: int, min_share: float, skip: set,
                   bandwidth_gbs=None) -> list[dict]:
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
    """The rows as the work a script repeats sees them: with `window` (key -> {"calls"}, the
    calls made while that work ran), each row's calls are the window's and its time those calls
    at the row's per-call time, and rows the window never saw are set apart as setup; without
    one, the whole recording. The per-call time is the row's own (time_ms / calls), which leaves
    out a first cold call once there are other samples; a window's time difference would keep
    it, as it entered while it was the only sample, and make an op called once per forward look
    hot (a first CUDA call can cost milliseconds). A row without a kernel of its own whose calls
    a chain kernel served in the window (chain_entries()) counts only the calls that still ran
    eager: the members of a landed chain are not searched again one by one. "share" is then
    recomputed over the tunable rows, so one-time work and what can never be tuned (a copy from
    the CPU, ...) do not dilute --min-share. Returns (rows, setup)."""
    steady, setup = [], []
    for r in rows:
        r = dict(r)
        if window is not None and r["intercepted"]:
            w = window.get(r["key"])
            if not w or w["calls"] <= 0:
                r["setup"] = True
                setup.append(r)
                continue
            per_call = r["time_ms"] / r["calls"] if r["calls"] > 0 else 0.0
            calls = w["calls"] - (0 if r.get("has_kernel") else min(w.get("served", 0), w["calls"]))
            r["time_ms"], r["calls"] = per_call * calls, calls
        steady.append(r)
    total = sum(r["time_ms"] for r in steady if r["intercepted"] and not r.get("untunable"))
    for r in steady:
        r["share"] = (r["time_ms"] / total if total > 0 and r["intercepted"] and not r.get("untunable")
                      else 0.0)
    return steady, setup


def stats_delta(now: list[dict], before: dict) -> dict:
    """key -> {"calls", "served"} made since the snapshot `before` (snapshot(rows));
    steady_rows gives them the row's per-call time."""
    out = {}
    for r in now:
        calls, served = before.get(r["key"], (0, 0))
        if r["intercepted"] and r["calls"] > calls:
            out[r["key"]] = {"calls": r["calls"] - calls, "served": r.get("served", 0) - served}
    return out


def snapshot(rows: list[dict]) -> dict:
    return {r["key"]: (r["calls"], r.get("served", 0)) for r in rows if r["intercepted"]}


_BYTES = ("bytes_moved", "footprint_bytes", "out0_bytes")


def add_bytes_moved(rows: list[dict], cache: dict | None = None) -> None:
    """Fill row["bytes_moved"], row["footprint_bytes"] and row["out0_bytes"] (_jobs) for the
    intercepted, servable rows (others are never tuned); `cache` (key -> the three, None:
    unknown) spares the online tuner's looks the same question."""
    for r in rows:
        if r["intercepted"] and r["servable"]:
            if cache is not None and r["key"] in cache:
                if cache[r["key"]] is not None:
                    r.update(zip(_BYTES, cache[r["key"]]))
                continue
            try:
                d = _jobs.describe(r["key"])
                r["bytes_moved"] = _jobs.bytes_moved(*d)
                r["footprint_bytes"] = _jobs.footprint_bytes(*d)
                r["out0_bytes"] = _jobs.first_output_bytes(*d)
            except KernelForgeError:
                pass
            if cache is not None:
                cache[r["key"]] = (tuple(r[k] for k in _BYTES) if "bytes_moved" in r else None)


def memory_shortfall(row: dict, captures: int) -> str | None:
    """Why a CUDA signature is too big to tune beside the model (None: it is not): its captures,
    the copies write_job makes of a call, the random inputs and the outputs live in this process,
    about (captures + 3) x the bytes of a call's tensors (footprint_bytes); they may take at
    most a quarter of the free memory (the timing buffers take at most
    _jobs.MEASURE_FREE_FRACTION besides)."""
    if not on_gpu(row.get("device")):
        return None
    need = (captures + 3) * (row.get("footprint_bytes") or row.get("bytes_moved") or 0)
    try:
        free, _ = _jobs.cuda_memory(torch.device(row["device"]))
    except Exception as e:  # no answer from the device: do not risk it
        return f"free GPU memory unknown ({e})"
    if need > free // 4:
        return (f"copying and measuring its calls takes about {need >> 20} MiB, more than a quarter "
                f"of the {free >> 20} MiB free on the GPU")
    return None


def _children_cpu_s() -> float:
    """CPU seconds of this process's finished children (the worker, its compiler and evaluator
    children once it has waited for them)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def calls_flowing(window_s: float = 0.05) -> bool:
    """Whether the model made an intercepted call within `window_s` (kf_total_calls, read twice)."""
    lib, rt = _native.lib(), _native.runtime()
    n0 = lib.kf_total_calls(rt)
    time.sleep(window_s)
    return lib.kf_total_calls(rt) != n0


def wait_quiet(max_wait_s: float, window_s: float = 0.05, poll_s: float = 0.005,
               idle=None) -> bool:
    """Wait for a gap of `window_s` without intercepted calls (kf_total_calls, read every
    `poll_s`), at most max_wait_s; True if one came. The gap is counted from the last change
    seen, so a pause is noticed window_s after the model's last call. `idle()`, when given,
    must say True as well (on CUDA: the model's queued work has finished, cuda_idle)."""
    lib, rt = _native.lib(), _native.runtime()
    t0 = time.monotonic()
    n, changed = lib.kf_total_calls(rt), t0
    while True:
        time.sleep(poll_s)
        now, m = time.monotonic(), lib.kf_total_calls(rt)
        if m != n:
            n, changed = m, now
        elif now - changed >= window_s and (idle is None or idle()):
            return True
        if now - t0 >= max_wait_s:
            return False


def cuda_idle() -> bool:
    """Whether the current device's default stream has finished its work (cudaStreamQuery: no
    waiting). A model issues its calls ahead of the GPU: without calls, its kernels may still
    run. Work on streams of its own is not seen."""
    try:
        return bool(torch.cuda.default_stream().query())
    except Exception:  # no answer: do not hold the tuner up on it
        return True


def land(staging: str, cache_dir: str, key: str) -> None:
    """Move the confirmed entry `key` from the staging cache into the cache the model loads."""
    import ctypes
    import tempfile

    lib = _native.lib()
    with tempfile.TemporaryDirectory(prefix="kforge-land-") as tmp:
        path = os.path.join(tmp, "entry.kfbundle")
        n, err = ctypes.c_int(0), ctypes.create_string_buffer(1024)
        code = lib.kf_cache_dir_export(staging.encode(), path.encode(), key.encode(),
                                       ctypes.byref(n), err, len(err))
        if code or n.value != 1:
            raise KernelForgeError(f"staged entry {key}: {err.value.decode() or 'not found'}")
        code = lib.kf_cache_dir_import(cache_dir.encode(), path.encode(), ctypes.byref(n), err,
                                       len(err))
        if code or n.value != 1:
            raise KernelForgeError(f"cache {cache_dir}: {err.value.decode() or 'not imported'}")


# After this many waits in a row without a gap in the model's calls, each timing waits one quiet
# window only (quiet()): a model that never pauses no longer costs every timing a long wait.
QUIET_MISSES = 2


class OnlineTuner(threading.Thread):
    """KFORGE_TUNE=1: one background thread per process, one worker process at a time. Nothing on
    the model's path waits for it; its own torch calls bypass the plugin (kf_set_thread_bypass).

    Anytime tuning: every hot signature, hottest first, first gets a ramp pass (the worker's
    --starts-only: each template's start point), whose winner lands as soon as it is confirmed;
    then deep searches (the full MCTS) in priority order, on the same job folder (its cases and
    eager time, and its compiled candidates, JOB_DIR/blobs, are reused). A winner is inserted
    into a staging cache in the job folder, confirmed by _confirm (interleaved timing against
    eager, with a spread check), and only then moved into the model's cache. The worker runs at
    KFORGE_TUNE_DUTY of the wall time, nice'd, on KFORGE_TUNE_CORES CPUs; on CUDA its kernels run
    on a low-priority stream."""

    def __init__(self):
        super().__init__(name="kforge-tuner", daemon=True)
        self.cfg = settings()
        self.done: set[str] = set()
        self.stop = threading.Event()
        self.procs = _Procs(self.stop)
        self.results: list[dict] = []
        self.later: dict[str, float] = {}  # key -> when to look again (leased, or not called)
        self.seen: dict[str, tuple[float, int]] = {}  # key -> (first look, its calls then)
        self.calls: dict[str, int] = {}  # key -> its calls at the latest look
        self.busy = False  # a job is being prepared, searched or published
        self.jobs: dict[str, str] = {}  # key -> its job folder (reused by the deep pass)
        self.ramped: set[str] = set()
        self.window: dict[str, dict] = {}  # key -> {"calls"} since the look before (run())
        self.landed_us: dict[str, float] = {}  # key -> kernel_us of what landed
        self.tries: dict[str, int] = {}  # key -> confirmations refused for spread
        self.lock = threading.Lock()
        self.status_lock = threading.Lock()  # one status file writer at a time (_write_status)
        self.t0 = time.monotonic()
        self.busy_s = 0.0  # the workers' busy time (wall time less their duty sleeps)
        self.credit = self.cfg["burst_s"]  # the duty bucket: seconds of work allowed now
        self.credit_t = None  # when it was last refilled (None: before the first search)
        self.wait_s = None  # the next wait for a quiet gap (None: quiet_wait_s; quiet())
        self.misses = 0  # waits in a row that saw no gap (quiet())
        self.device = "cpu"  # the device of the signature being tuned (quiet())
        self.check = None  # the model check under way (_modelcheck.ForwardArms), if any
        self.check_done = False  # it has judged: the tuner thread applies the verdict
        self.checked = 0  # kernels landed when the last check started
        self.state = {"enabled": True, "pid": os.getpid(), "settings": dict(self.cfg),
                      "phase": "waiting", "queue": [], "current": None, "hot_at": {},
                      # what the current pass is doing: prepare, worker, confirm, land (None:
                      # between passes); benchmarks/online_tuning.py times the model by it
                      "step": None,
                      "time_spent_s": {"prepare": 0.0, "worker": 0.0, "worker_busy": 0.0,
                                       "worker_cpu": 0.0, "duty_wait": 0.0, "confirm": 0.0,
                                       "look": 0.0},
                      "looks": 0,  # the rankings made (each: stats, chains, the ranking)
                      "landed": [], "refused": [], "searches": 0, "checks": [],
                      # timings that waited for a quiet gap in the model's calls (quiet()):
                      # found one, waited in vain (timed anyway), seconds waited
                      "gates": {"quiet": 0, "busy": 0, "wait_s": 0.0}}
        atexit.register(self.shutdown)

    def shutdown(self):
        """Stop: the worker and confirmation running now are killed, and none is started after
        (_search); a job being written is finished first (busy says when). The jobs' cases go:
        no later process searches this one's job folders."""
        self.stop.set()
        if self.check is not None:
            self.check.remove()
            self.check.finish()  # every kernel served again
        for p in list(self.procs):
            p.kill()
        for job_dir in list(self.jobs.values()):
            _jobs.drop_cases(job_dir)
        self._write_status()  # what this process ended with, for `kforge ui`

    # ---- status (kernel_forge.tuner_status(), and a file for `kforge ui`)
    def status(self) -> dict:
        import copy

        with self.lock:
            st = copy.deepcopy(self.state)
        st["elapsed_s"] = time.monotonic() - self.t0
        return st

    def _note(self, **kw):
        with self.lock:
            self.state.update(kw)
        self._write_status()

    def _spent(self, what: str, s: float):
        with self.lock:
            self.state["time_spent_s"][what] += s

    def _looked(self, since: float):
        """A look ended: its time (Python in this process, which the model's threads wait for)."""
        with self.lock:
            self.state["time_spent_s"]["look"] += time.monotonic() - since
            self.state["looks"] += 1

    def _write_status(self):
        # the tuner's thread and the exit (shutdown) both write it: through one temporary file
        # at a time, else one's replace could publish the other's half-written file
        with self.status_lock:
            try:
                root = _jobs.jobs_root()
                os.makedirs(root, mode=0o700, exist_ok=True)
                path = os.path.join(root, f"tuner-{os.getpid()}.json")
                tmp = path + ".tmp"
                import json

                doc = self.status()
                doc["updated"] = time.time()
                with open(tmp, "w") as f:
                    json.dump(doc, f)
                os.replace(tmp, path)
            except (OSError, KernelForgeError, ValueError):
                pass  # the status file is for the UI only

    def run(self):
        from . import cache_dir, reload_cache, stats

        search = {"iterations": self.cfg["iterations"], "margin": self.cfg["margin"],
                  "proposer": "builtin", "cache_dir": cache_dir()}
        before, last, reasons, nbytes = {}, {}, {}, {}
        self._write_status()
        while not self.stop.wait(self.cfg["interval_s"]):
            t_look = time.monotonic()
            try:
                if self.check_done:
                    self._end_check()
                # the time since the last look ranks, not since the start, and only what was also
                # called in the look before: a script's one-time setup (weights copied to the GPU,
                # casts) is never ranked, and the repeated work is
                now = stats()
                window, before = stats_delta(now, before), snapshot(now)
                repeated = {k: w for k, w in window.items() if k in last}
                last = self.window = window
                mark_untunable(now, reasons)
                rows, _ = steady_rows(now, repeated)
                total = {r["key"]: r["calls"] for r in now}
                self.calls = total
                for k, c in total.items():
                    self.seen.setdefault(k, (t_look, c))
                for r in rows:  # "hot" still counts every call so far
                    r["calls"] = total.get(r["key"], r["calls"])
                    if r["has_kernel"] and r["key"] in self.ramped:
                        r["has_kernel"] = False  # served from its ramp: its deep pass is due
                t = time.monotonic()
                skip = self.done | {k for k, when in self.later.items() if when > t}
                # a hot shape served by a family may be far from its roofline: measured below
                family = [dict(r, has_kernel=False) for r in rows if r.get("family")]
                chains = self.chain_candidates(rows, skip, now) if self.cfg["chains"] else []
                if not hot_candidates(rows + family, self.cfg["min_calls"], self.cfg["min_share"],
                                      skip) and not chains:
                    self._looked(t_look)
                    continue  # nothing hot: no measurement on the device at all
                add_bytes_moved(rows, nbytes)
                bw = device_bandwidths(rows)  # each row against its own device's roofline
                cands = hot_candidates(rows, self.cfg["min_calls"], self.cfg["min_share"],
                                       skip, bw)
                if chains:  # one priority order
                    prio = {id(r): priority(r, bw) for r in cands}
                    by_key = {r["key"]: r for r in rows}
                    prio.update({id(c): chain_priority(c, by_key, bw) for c in chains})
                    cands = sorted(cands + chains, key=lambda r: -prio[id(r)])
                with self.lock:
                    for r in cands:
                        self.state["hot_at"].setdefault(r["key"], time.monotonic() - self.t0)
                # anytime: every hot signature's ramp pass, hottest first, before any deep search
                order = [r for r in cands if r["key"] not in self.ramped] + \
                        [r for r in cands if r["key"] in self.ramped]
                self._note(queue=[{"signature": r["signature"], "key": r["key"],
                                   "share": r["share"],
                                   "pass": "deep" if r["key"] in self.ramped or not
                                   self.cfg["ramp"] else "ramp"} for r in order])
                self._looked(t_look)
                self.busy = True
                for r in order:  # the first one this process may search (fleet: not leased)
                    self.done.add(r["key"])
                    got = self.tune_pass(r, search)
                    if got == "ramped":
                        self.done.discard(r["key"])  # its deep search is still to come
                    if got == "retry":
                        self.done.discard(r["key"])
                        self.later[r["key"]] = time.monotonic() + 5 * self.cfg["interval_s"]
                    if got != "later":
                        break
                    self.done.discard(r["key"])
                    self.later[r["key"]] = time.monotonic() + 2 * self.cfg["interval_s"]
                reload_cache()
                self._start_check()
            except Stopped:
                pass
            except Exception as e:  # the user's process must never be harmed by tuning
                log.warning("online tuning: %s", e)
            finally:
                self.busy = False
                self._note(current=None, phase="waiting", step=None)

    # ---- the model check, in this process (README, "The model check")
    def _start_check(self):
        """Kernels landed since the last check: time the model's next forwards in turn with every
        kernel, chain kernels off and nothing served (ForwardArms' hooks, on the model's
        threads); _end_check applies the verdict once it is in."""
        from . import chain_entries
        from ._modelcheck import ARMS, ForwardArms

        with self.lock:
            n = len(self.state["landed"])
        if not self.cfg["check"] or self.check is not None or n == self.checked:
            return
        self.checked = n
        arms = ARMS if chain_entries() else ("all", "none")

        def judged():
            self.check_done = True

        self.check = ForwardArms(arms, judged)
        self.check.install()

    def _end_check(self):
        """The check judged: the entries it names are disabled in the cache (no later process
        serves them) and in this process the arm it kept is what serves from now on."""
        from . import cache_dir, disable, disable_chains
        from ._modelcheck import LABELS, apply, served_now
        from ._warmup import _disable_entry

        fa, self.check, self.check_done = self.check, None, False
        fa.remove()
        res = {"arms": fa.arms, "rows": fa.finish(), "overlap": fa.overlap, "served": served_now()}
        v = apply(res, cache_dir(), _disable_entry)
        if v["keep"] == "ops":
            disable_chains()
        elif v["keep"] == "none":
            disable()
        rec = {"keep": v["keep"], "rounds": v["rounds"], "ms": v["ms"], "why": v.get("why", ""),
               "compared": v["compared"], "disabled": [e["key"] for e in v["disabled"]],
               "at_s": time.monotonic() - self.t0}
        # said before it is published: a reader of tuner_status() may exit as soon as it is
        log.info("online tuning: model check, %d rounds: %s%s", v["rounds"],
                 "every kernel kept" if v["keep"] == "all" else f"kept {LABELS[v['keep']]}",
                 f" ({v['why']})" if v.get("why") else "")
        with self.lock:
            self.state["checks"].append(rec)
        self._write_status()

    def tune_fleet(self, row: dict, search: dict) -> str:
        """With a fleet cache (KFORGE_REMOTE_CACHE): its entry if published, else a search under
        the signature's lease, published when inserted; "later" while another process holds the
        lease (the fetcher installs its winner; a crashed tuner's lease expires). The fleet
        skips the ramp pass: what it publishes is the deep search's winner."""
        from . import _remote

        remote = _remote.get()
        ck = _remote.cache_key_of(row["key"]) if remote is not None else None
        if ck is None:
            return self.tune_one(row, search, ramp=self.cfg["ramp"])
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
            n = len(self.results)
            self.tune_one(row, search, ramp=False)
            result = self.results[-1] if len(self.results) > n else None  # None: no search ran
            # a landed winner is published; a search without one is noted for the fleet; a
            # winner the confirmation refused is neither (another process may confirm its own)
            if result and (result.get("landed") or result.get("status") != "inserted"):
                _remote.publish(result, search["cache_dir"], ck)
        finally:
            if lease:
                lease.release()
        return "tuned"

    def chain_candidates(self, rows: list[dict], skip: set, now: list[dict] | None = None) -> list[dict]:
        """The hot fusable chains (kforge warmup's rule, at the online thresholds), each as a row
        keyed "chain:<sig_hex>"; one with a kernel attached only while its deep pass is due.
        `now`: this look's stats() rows (spares chains() reading them again)."""
        from . import _chains_of
        from ._warmup import chain_candidates

        seen = [c for c in _chains_of(self.cfg["min_calls"], now) if c.get("spec")]
        attached = {c["spec"]["sig_hex"] for c in seen if c["status"] != "recorded"}
        # ranked as the rows are: the calls since the last look (its head's), not since the start
        seen = [dict(c, calls=self.window.get(c["keys"][c.get("spec_first", 0)], {}).get("calls", 0))
                for c in seen]
        out = []
        for c in chain_candidates(seen, rows, self.cfg["min_share"], 0):
            c["key"] = "chain:" + c["spec"]["sig_hex"]
            c["members"] = [r for r in rows if r["key"] in c["keys"]]  # their bytes: later
            c["device"] = c["members"][0].get("device", "cpu") if c["members"] else "cpu"
            if c["key"] in skip or (c["spec"]["sig_hex"] in attached and c["key"] not in self.ramped):
                continue
            out.append(c)
        return out

    def _prepare_chain(self, row: dict, search: dict) -> str | None:
        """A chain's job folder (written once, from real calls of its members), or None."""
        from ._warmup import chain_capture_keys, write_chain_from_captures

        key = row["key"]
        if self._job_ready(key):
            return self.jobs[key]
        bytes_moved = sum(r.get("bytes_moved") or 0 for r in row["members"])
        if not self._may_prepare(dict(row, bytes_moved=bytes_moved)):
            return None
        caps = self._capture(list(dict.fromkeys(chain_capture_keys(row))))
        self.quiet()  # writing the job times eager
        t = time.monotonic()
        try:
            with _jobs.bypass():
                job_dir = write_chain_from_captures(row, lambda k: caps.get(k, []),
                                                    {"search": search, "random_inputs": 3})
        except (KernelForgeError, _jobs.NotTunable, ValueError, RuntimeError) as e:
            log.info("online tuning: %s skipped: %s", row["signature"], e)
            self._refuse(row, "prepare", str(e))
            return None
        self._spent("prepare", time.monotonic() - t)
        self.jobs[key] = job_dir
        log.info("online tuning: %s (%.1f%% of recorded time): job %s", row["signature"],
                 100 * row["share"], job_dir)
        return job_dir

    def _job_ready(self, key: str) -> bool:
        """Whether key's job folder was written and still has its cases (`kforge jobs clean` may
        have removed them: the job is written again)."""
        return key in self.jobs and os.path.isdir(os.path.join(self.jobs[key], "cases"))

    def tune_pass(self, row: dict, search: dict) -> str:
        """The next pass for a signature or chain; its job's cases go once it is "tuned"."""
        got = self.tune_chain(row, search) if row.get("spec") else self.tune_fleet(row, search)
        if got == "tuned":  # nothing more for it: a large signature's cases take a GB
            _jobs.drop_cases(self.jobs.pop(row["key"], None))
        return got

    def tune_chain(self, row: dict, search: dict) -> str:
        """One pass for a chain (tune_one's, less the confirmation: the chain speed guard of the
        process that serves it compares it with its members as they run without it, and detaches
        it if it loses); "ramped" or "tuned"."""
        pass_ = self._begin(row, self.cfg["ramp"])
        try:
            job_dir = self._prepare_chain(row, search)
        except NotCalled as e:
            return self._not_called(row, e)
        if job_dir is None:
            return "tuned"
        result, staging, _ = self._search(row, job_dir, pass_, confirm=False)
        if self._worth_confirming(row, pass_, result):
            self._land(row, pass_, result, staging, search, None)
        return "ramped" if pass_ == "ramp" else "tuned"

    def _worth_confirming(self, row: dict, pass_: str, result: dict) -> bool:
        if result["status"] != "inserted" or not result.get("cache_key"):
            return False
        had = self.landed_us.get(row["key"])
        if had and (result.get("best_us") or 0) >= had * (1 - max(self.cfg["margin"], 0)):
            log.info("online tuning: %s: the %s pass found nothing faster than what landed "
                     "(%.1f us)", row["signature"], pass_, had)
            return False
        return True

    def quiet(self) -> bool | None:
        """Before a timing: wait up to quiet_wait_s for a gap of quiet_ms in the model's calls
        (wait_quiet). True: one came; False: timed anyway; None: waits are off."""
        if self.cfg["quiet_wait_s"] <= 0:
            return None
        t = time.monotonic()
        window = self.cfg["quiet_ms"] / 1e3
        idle = cuda_idle if on_gpu(self.device) else None
        q = wait_quiet(self.cfg["quiet_wait_s"] if self.wait_s is None else self.wait_s, window,
                       idle=idle)
        # a model that did not pause is likely not to pause next time either: half the wait
        # after a miss, one window (still enough to see a gap) after QUIET_MISSES misses in a
        # row, the full wait again after a gap
        last = self.cfg["quiet_wait_s"] if self.wait_s is None else self.wait_s
        self.misses = 0 if q else self.misses + 1
        if q:
            self.wait_s = None
        elif self.misses >= QUIET_MISSES:
            self.wait_s = min(window, self.cfg["quiet_wait_s"])
        else:
            self.wait_s = max(min(window, self.cfg["quiet_wait_s"]), last / 2)
        with self.lock:
            g = self.state["gates"]
            g["quiet" if q else "busy"] += 1
            g["wait_s"] += time.monotonic() - t
        return q

    def _gate(self, ev: dict):
        """The worker's --gate: its next candidate is timed once this returns."""
        self.quiet()

    def _refill(self, now: float):
        """The duty bucket gains duty x the wall time since its last refill, up to burst_s:
        idle time does not pile up into more than one burst."""
        if self.credit_t is not None:
            self.credit = min(self.cfg["burst_s"],
                              self.credit + self.cfg["duty"] * (now - self.credit_t))
        self.credit_t = now

    def used(self, busy: float):
        """A search worked `busy` seconds: taken from the duty bucket (may go below zero: the
        last node's sleep the worker left owed)."""
        self.busy_s += busy
        self.credit -= busy

    def pay_duty(self) -> float:
        """Before a search: wait until the duty bucket is not in debt, and return the work it
        allows at once (the worker's --duty-credit; past it the worker sleeps between nodes to
        work at most the duty share). The workers' busy time (CPU time on the host, working
        wall time on CUDA) is so at most burst_s + duty x the time since the first search, over
        any stretch of time; a search that ended on a node keeps no sleep owed inside the
        worker, so that its winner lands at once: it is paid here."""
        now = time.monotonic()
        self._refill(now)
        if self.credit < 0:
            self._note(phase="duty wait")
            self.stop.wait(-self.credit / self.cfg["duty"])
            self._spent("duty_wait", time.monotonic() - now)
            self._refill(time.monotonic())
        return max(0.0, self.credit)

    def _worker_args(self, staging: str, ramp: bool, credit: float = 0.0) -> list[str]:
        a = ["--cache", staging, "--duty", repr(self.cfg["duty"]), "--duty-credit",
             f"{credit:.3f}", "--nice", str(self.cfg["nice"]), "--cores", str(self.cfg["cores"])]
        return a + (["--starts-only"] if ramp else [])

    def _may_prepare(self, row: dict) -> bool:
        """Whether `row`'s job fits beside the model (memory_shortfall; refused with the reason
        if not); noted as the prepare step."""
        short = memory_shortfall(row, self.cfg["captures"])
        if short:
            log.info("online tuning: %s skipped: %s", row["signature"], short)
            self._refuse(row, "prepare", short)
            return False
        self._note(step="prepare")
        return True

    def _idle_limit(self, keys: list[str]) -> float:
        """How long _capture waits without a new call: three of the slowest key's mean gaps
        between calls since it was first seen (a script's one-time setup, ranked while it ran,
        stops being called), at least three looks, at most 60 s."""
        t, gap = time.monotonic(), self.cfg["interval_s"]
        for k in keys:
            first, c0 = self.seen.get(k, (t, 0))
            n = self.calls.get(k, c0) - c0
            if n > 0:
                gap = max(gap, (t - first) / n)
        return min(60.0, 3 * gap)

    def _capture(self, keys: list[str]) -> dict[str, list]:
        """The next real calls of each signature in `keys` (KFORGE_TUNE_CAPTURES of each, or what
        came before _idle_limit passed without one; a call a kernel or a chain kernel serves is
        copied as well), as take_captures gives them; raises NotCalled when none came."""
        for k in keys:
            request_captures(k, self.cfg["captures"])
        n = {k: n_tensor_args(k) for k in keys}
        caps = {k: [] for k in keys}
        idle = self._idle_limit(keys)
        last = time.monotonic()
        while time.monotonic() - last < idle and not self.stop.is_set():
            for k in keys:
                got = take_captures(k, n[k])
                caps[k] += got
                if got:
                    last = time.monotonic()
            if all(len(c) >= self.cfg["captures"] for c in caps.values()):
                break
            time.sleep(0.05)
        for k in keys:
            if len(caps[k]) < self.cfg["captures"]:
                request_captures(k, 0)  # no copies left waiting for a call that may not come
                caps[k] += take_captures(k, n[k])
        if not any(caps.values()):
            raise NotCalled(f"not called for {idle:.0f} s")
        return caps

    def _prepare(self, row: dict, search: dict) -> str | None:
        """The job folder of `row` (written once, from real calls), or None."""
        key = row["key"]
        if self._job_ready(key):
            return self.jobs[key]
        if not self._may_prepare(row):
            return None
        captures = self._capture([key])[key]
        self.quiet()  # writing the job times eager
        t = time.monotonic()
        with _jobs.bypass():
            job_dir = write_job_from_captures(key, captures, search)
            info, args = _jobs.describe(key)
            fn = _jobs.resolve(info["op"])
            pos, kw = _jobs.call_from_args(fn, args, captures[0])
            # host copies (torch.save would copy CUDA storages into pageable memory on the
            # model's stream); the child puts them back on the job's device
            torch.save({"op": info["op"], "args": _jobs.host_exact(pos),
                        "kwargs": _jobs.host_exact(kw), "margin": self.cfg["margin"],
                        "max_spread": self.cfg["max_spread"], "rounds": self.cfg["confirm_rounds"]},
                       os.path.join(job_dir, "confirm.pt"))
        self._spent("prepare", time.monotonic() - t)
        self.jobs[key] = job_dir
        log.info("online tuning: %s (%.1f%% of recorded time): job %s", row["signature"],
                 100 * row["share"], job_dir)
        return job_dir

    def _not_called(self, row: dict, e: "NotCalled") -> str:
        """"later": looked at again if it is still ranked then (setup work is not)."""
        log.info("online tuning: %s was %s; looked at again later", row["signature"], e)
        return "later"

    def _refuse(self, row: dict, pass_: str, reason: str):
        with self.lock:
            self.state["refused"].append({"signature": row["signature"], "key": row["key"],
                                          "pass": pass_, "reason": reason,
                                          "t_s": time.monotonic() - self.t0})
        self._write_status()

    def tune_one(self, row: dict, search: dict, ramp: bool = True) -> str:
        """One pass for `row`: "ramped" (its deep search is still to come), "retry" (a
        confirmation too noisy to trust: again later), "tuned" (nothing more for it)."""
        key = row["key"]
        pass_ = self._begin(row, ramp)
        try:
            job_dir = self._prepare(row, search)
        except NotCalled as e:
            return self._not_called(row, e)
        if job_dir is None:
            return "tuned"
        result, staging, child = self._search(row, job_dir, pass_, confirm=True)
        go = self._worth_confirming(row, pass_, result)
        more = "ramped" if pass_ == "ramp" else "tuned"
        if not go:
            self.finish_confirm(child, False)
            return more
        self._note(step="confirm")
        ok, info = self.finish_confirm(child, True)
        if not ok:
            reason = info.get("reason", "not confirmed")
            spread_fail = "spread" in reason or "quiet" in reason
            n = self.tries.get(key, 0) + 1
            self.tries[key] = n
            retry = spread_fail and n <= self.cfg["retries"]
            log.info("online tuning: %s: %s pass winner refused: %s%s", row["signature"], pass_,
                     reason, "; will retry" if retry else "")
            self._refuse(row, pass_, reason + ("; will retry" if retry else ""))
            if retry:
                if pass_ == "ramp":
                    self.ramped.discard(key)
                return "retry"
            return more
        self._land(row, pass_, result, staging, search, info)
        return more

    def _begin(self, row: dict, ramp: bool = True) -> str:
        """The pass `row` is due for ("ramp" or "deep"), noted as the current one."""
        pass_ = "ramp" if ramp and row["key"] not in self.ramped else "deep"
        self._note(phase=pass_, current={"signature": row["signature"], "key": row["key"],
                                         "pass": pass_, "since_s": time.monotonic() - self.t0})
        self.device = row.get("device") or "cpu"
        return pass_

    def _search(self, row: dict, job_dir: str, pass_: str, confirm: bool):
        """The worker's pass on job_dir, its winner inserted into a staging cache there, within
        the duty share; with confirm, the confirmation child is started beside it. Returns
        (result, staging, child)."""
        credit = self.pay_duty()
        if self.stop.is_set():  # shut down meanwhile (a killed worker is not started again)
            raise Stopped()
        self._note(phase=pass_, step="worker")  # a duty wait is over: the pass again
        staging = os.path.join(job_dir, f"staging-{pass_}")
        shutil.rmtree(staging, ignore_errors=True)  # a retry's or an earlier pass's entry
        env = dict(os.environ, OMP_NUM_THREADS=str(max(1, self.cfg["cores"])))
        child = self.spawn_confirm(job_dir, staging) if confirm else None
        cpu0 = _children_cpu_s()
        t = time.monotonic()
        try:
            gate = self._gate if self.cfg["quiet_wait_s"] > 0 else None
            result = _jobs.run_worker(job_dir, extra_args=self._worker_args(staging, pass_ == "ramp", credit),
                                      proc_holder=self.procs, popen_kw={"env": env}, gate=gate)
        except BaseException:
            if child is not None:
                self.finish_confirm(child, False)
            raise
        self._spent("worker", time.monotonic() - t)
        result["pass"] = pass_
        # the worker's busy time as its duty cycle counts it (its NVRTC compiles leave the
        # device alone)
        busy = max(0.0, result.get("busy_s", 0.0))
        self._spent("worker_busy", busy)
        if on_gpu(row.get("device")):
            self.used(busy)  # the device's share: the worker's working wall time
        else:  # the cores' share: CPU time (a nice'd worker on a loaded machine mostly waits)
            cpu = _children_cpu_s() - cpu0
            self._spent("worker_cpu", cpu)
            self.used(min(busy, cpu))
        with self.lock:
            self.state["searches"] += 1
        self.results.append(result)
        log.info("online tuning: %s: %s pass %s (eager %.1f us, best %s us, %s)",
                 row["signature"], pass_, result["status"], result["eager_us"],
                 f"{result['best_us']:.1f}" if result.get("best_us") else "-",
                 result.get("detail") if result["status"] == "no_correct_kernel"
                 else result.get("stop_reason", ""))
        if pass_ == "ramp":
            self.ramped.add(row["key"])
        return result, staging, child

    def _land(self, row: dict, pass_: str, result: dict, staging: str, search: dict,
              info: dict | None):
        """Move the staged winner into the model's cache, reload, and note it (info: the
        confirmation's verdict; None for a chain, which the chain speed guard judges)."""
        key = row["key"]
        self._note(step="land")
        land(staging, search["cache_dir"], result["cache_key"])
        from . import reload_cache

        reload_cache()
        result["landed"] = True
        best = result.get("best_us") or 0
        self.landed_us[key] = best
        now = time.monotonic() - self.t0
        info = info or {}
        with self.lock:
            hot = self.state["hot_at"].get(key, now)
            rec = {"signature": row["signature"], "key": key, "cache_key": result["cache_key"],
                   "pass": pass_, "eager_us": result["eager_us"], "kernel_us": best,
                   "speedup": result.get("speedup"), "confirmed_ratio": info.get("ratio"),
                   "spread": info.get("spread"), "quiet": info.get("quiet"), "t_s": now,
                   # the confirmation's time, and the part of it before its first round
                   "confirm_s": info.get("confirm_s"),
                   "confirm_ready_s": info.get("confirm_ready_s"),
                   "after_hot_s": now - hot, "chain": bool(row.get("spec"))}
            self.state["landed"].append(rec)
        self._write_status()
        if row.get("spec"):
            log.info("online tuning: landed %s (%s pass): %.2fx in the search, %.1f s after it "
                     "became hot; the chain speed guard judges it where it is served",
                     row["signature"], pass_, result.get("speedup") or 0, rec["after_hot_s"])
        else:
            log.info("online tuning: landed %s (%s pass): %.2fx in the search, confirmed at %.3f "
                     "of eager (spread %.2f), %.1f s after it became hot", row["signature"], pass_,
                     result.get("speedup") or 0, info.get("ratio") or 0, info.get("spread") or 0,
                     rec["after_hot_s"])

    def spawn_confirm(self, job_dir: str, staging: str):
        """The confirmation child (_confirm), started beside the worker: its imports overlap the
        search. finish_confirm() gives it the go, or ends it."""
        import subprocess
        import sys

        env = {k: v for k, v in os.environ.items()
               if k not in ("KFORGE_TUNE", "KFORGE_REMOTE_CACHE", "KFORGE_DISABLE",
                            "KFORGE_CACHE")}
        env.update(KFORGE_CACHE_DIR=staging, KFORGE_EAGER_SAMPLE_EVERY="0",
                   KFORGE_CONFIRM_NICE=str(self.cfg["nice"]))
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                        else "")
        p = subprocess.Popen([sys.executable, "-m", "kernel_forge._confirm", job_dir], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        p.t_start = time.monotonic()
        self.procs.append(p)
        return p

    def finish_confirm(self, p, go: bool) -> tuple[bool, dict]:
        """_confirm's verdict on the staged winner (module docstring); go=False: nothing to
        confirm, the child is ended."""
        import json
        import subprocess

        info = {"reason": "the confirmation process gave no answer"}
        rounds = []  # before each round: whether the model paused (quiet())
        t = time.monotonic()
        ready = None  # when the child had the winner served once (its imports, its first use)
        try:
            if not go:  # nothing to confirm: no need to wait for its imports
                p.kill()
                return False, {}
            for line in p.stdout:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "loaded":
                    p.stdin.write("check\n")
                    p.stdin.flush()
                elif ev.get("event") in ("ready", "gate"):  # before the first round, the others
                    if ready is None:
                        ready = time.monotonic() - t
                    rounds.append(self.quiet())
                    p.stdin.write("go\n")
                    p.stdin.flush()
                else:
                    info = ev
            p.wait(timeout=120)
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            info = {"reason": f"the confirmation process failed: {e}"}
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            self.procs.remove(p)
            self._spent("confirm", time.monotonic() - t)
        info["confirm_s"], info["confirm_ready_s"] = time.monotonic() - t, ready
        info["quiet"] = rounds[0] if rounds else None  # before the first round
        info["quiet_rounds"] = sum(1 for q in rounds if q)
        return bool(info.get("confirmed")), info


_online = None


def start_online() -> OnlineTuner:
    global _online
    if _online is None:
        _online = OnlineTuner()
        _online.start()
    return _online


def status() -> dict:
    """kernel_forge.tuner_status(): the online tuner's state (README, "Online tuning")."""
    if _online is None:
        return {"enabled": False, "phase": "off", "queue": [], "current": None, "landed": [],
                "refused": [], "time_spent_s": {}, "searches": 0}
    return _online.status()
