"""`kforge warmup SCRIPT`: tune every hot signature of a workload offline.

The script runs in a child process with the plugin loaded:
  1. record: which intercepted signatures are hot (share of the recorded time, calls);
  2. capture: the plugin copies the first real calls of the chosen signatures, and at the end the
     child writes one job folder per signature (real calls, random inputs, eager's outputs and
     time).
Both in one run when the script runs more than RANK_AFTER_FORWARDS module forwards: the child
ranks after that many and captures from the next ones. Otherwise (or when a chosen signature was
not called again) the script runs a second time, to capture.
Then the forge worker tunes the jobs one after the other (priority: recorded time x headroom to
the roofline) with a progress bar, and the final table says what was found. The cache is written by the worker; any later process
with the plugin serves the winners (after its own first-use check).

    python -m kernel_forge._warmup record OUT.json [-m] SCRIPT [ARGS...]
    python -m kernel_forge._warmup rank OPTS.json OUT.json [-m] SCRIPT [ARGS...]
    python -m kernel_forge._warmup capture PLAN.json OUT.json [-m] SCRIPT [ARGS...]
    python -m kernel_forge._warmup check OUT.json [-m] SCRIPT [ARGS...]
are the child steps (used by the CLI, not meant to be run by hand): rank records, plans with
OPTS (make_plan's) after RANK_AFTER_FORWARDS forwards and captures in the same run, writing
OUT.json (the record), OUT.plan.json and OUT.jobs.json; check is the model check's run
(_modelcheck.child_check).
"""

from __future__ import annotations

import copy
import json
import os
import runpy
import shutil
import subprocess
import sys
import time

from ._forwards import OutermostForwards


def run_script(script: str, args: list[str], module: bool) -> int:
    """Run a user script as __main__ (as `python SCRIPT` would); its exit code."""
    sys.argv = [script] + list(args)
    if not module:
        if not os.path.exists(script):
            print(f"kforge: no such script: {script}", file=sys.stderr)
            return 2
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        if module:
            runpy.run_module(script, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


class ForwardWindows(OutermostForwards):
    """Which calls the plugin records while an nn.Module forward runs, in any thread: the work a
    script repeats, as opposed to its setup (building the model, moving and casting weights,
    loading a state dict), which runs outside any forward. A stats snapshot when the first
    outermost forward starts and when the last one under way ends adds the calls between to
    the window."""

    def __init__(self, stats):
        super().__init__()
        self.stats = stats
        self.forwards = 0
        self.start: dict = {}
        self.window: dict = {}
        self.on_forward = None  # called with the count after each outermost forward

    def begin(self, mod):
        if self.active == 1:
            from ._tuner import snapshot

            self.start = snapshot(self.stats())

    def end(self):
        if self.active:
            return None
        from ._tuner import stats_delta

        self.forwards += 1
        ended = self.forwards
        for k, w in stats_delta(self.stats(), self.start).items():
            acc = self.window.setdefault(k, {"calls": 0})
            acc["calls"] += w["calls"]
        if self.on_forward is not None:
            return lambda: self.on_forward(ended)
        return None


def record_doc(fw: ForwardWindows) -> dict:
    """What the recording run hands the parent: every row (untunable ones marked, bytes moved),
    each device's copy bandwidth, the forwards and their window, the recorded chains."""
    import kernel_forge as kf
    from . import _tuner

    rows = kf.stats()
    _tuner.mark_untunable(rows)
    _tuner.add_bytes_moved(rows)
    if os.environ.get("KFORGE_REMOTE_CACHE"):  # the fleet cache asks by cache key
        from . import _remote

        for r in rows:
            if r["intercepted"] and r["servable"] and not r["has_kernel"]:
                r["cache_key"] = _remote.cache_key_of(r["key"])
    bw = _tuner.device_bandwidths(rows)  # for the priority: time x headroom to the roofline
    try:
        chains = kf._chains_of(2, rows)  # chains(), from these rows: no second stats()
    except Exception:  # noqa: BLE001 - chains are optional in the warm-up
        chains = []
    return {"rows": rows, "bandwidth_gbs": bw, "forwards": fw.forwards,
            "window": copy.deepcopy(fw.window) if fw.forwards else None, "chains": chains}


def _child_record(out: str, script_args: list[str], opts_path: str | None = None) -> int:
    import kernel_forge as kf
    from . import _jobs, _tuner

    opts = None
    if opts_path:
        with open(opts_path) as f:
            opts = json.load(f)
    module = script_args[0] == "-m"
    if module:
        script_args = script_args[1:]
    fw = ForwardWindows(kf.stats)
    state: dict = {}

    def rank(n):  # after the n-th forward: plan once, then capture from the next forwards
        if state or n < RANK_AFTER_FORWARDS or _graph_capturing():
            return
        state["tried"] = True
        try:
            with _jobs.bypass():
                rec = record_doc(fw)
                plan = make_plan(rec, opts)["plan"]
            if plan is not None:
                for key in plan_capture_keys(plan):
                    _tuner.request_captures(key, plan["captures"])
            state.update(rec=rec, plan=plan)
        except Exception as e:  # noqa: BLE001 - the parent captures in a second run instead
            print(f"kforge warmup: could not plan in the recording run ({e}); capturing in a "
                  "second run", file=sys.stderr)

    if opts is not None:
        fw.on_forward = rank
    kf.set_recording(True)
    fw.install()
    try:
        code = run_script(script_args[0], script_args[1:], module)
    finally:
        fw.remove()
        kf.set_recording(False)
        with open(out, "w") as f:
            json.dump(state.get("rec") or record_doc(fw), f)
        if state.get("plan") is not None:
            with open(out + ".plan.json", "w") as f:
                json.dump(state["plan"], f)
            write_jobs(state["plan"], out + ".jobs.json", require_all=True)
    return code


def _graph_capturing() -> bool:
    """A CUDA graph is being captured on this thread's stream: the bandwidth probe would break it."""
    import torch

    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def plan_capture_keys(plan: dict) -> set:
    chain_keys = {k for c in plan.get("chains", []) for k in chain_capture_keys(c)}
    return {p["key"] for p in plan["jobs"]} | chain_keys


def _child_capture(plan_path: str, out: str, script_args: list[str]) -> int:
    from . import _tuner

    with open(plan_path) as f:
        plan = json.load(f)
    module = script_args[0] == "-m"
    if module:
        script_args = script_args[1:]
    for key in plan_capture_keys(plan):
        _tuner.request_captures(key, plan["captures"])
    code = 0
    try:
        code = run_script(script_args[0], script_args[1:], module)
    finally:
        write_jobs(plan, out)
    return code


def write_jobs(plan: dict, out: str, require_all: bool = False) -> None:
    """The plan's job folders from this process's captures, hottest first, within the plan's
    deadline (or its time_budget from now); {key: {"job_dir"} | {"error"}, "deadline": that
    deadline or None} to `out`. require_all: write nothing unless every
    planned signature was called (the recording run's captures: the parent captures in a second
    run otherwise)."""
    import kernel_forge as kf
    from . import _jobs, _tuner

    # time.time() when the budget ends: counted from here, once the script has run (its model
    # build and forwards are not tuning), unless the plan fixes it; jobs come hottest first
    deadline = plan.get("deadline") or (time.time() + plan["time_budget"]
                                        if plan.get("time_budget") else None)
    results = {}
    taken = {}

    def take(key):  # once per key: an op job and a chain job may share a head's captures
        if key not in taken:
            taken[key] = _tuner.take_captures(key, _tuner.n_tensor_args(key))
        return taken[key]

    if require_all and not all(take(k) for k in plan_capture_keys(plan)):
        return
    # writing jobs gets a share of what the script's runs left, and stops while the rest can
    # still give every written job a search of its own
    write_until = deadline and time.time() + WRITE_SHARE * max(0.0, deadline - time.time())

    def over_budget():
        return deadline and results and (time.time() > write_until or deadline - time.time()
                                         < (len(results) + 1) * MIN_JOB_S)

    order = sorted([("op", p) for p in plan["jobs"]] + [("chain", c) for c in plan.get("chains", [])],
                   key=lambda w: -w[1].get("prio", 0))
    for kind, p in order:
        key = p["row_key"] if kind == "chain" else p["key"]
        try:
            # the hottest job is written whatever the clock says: recording and capturing a slow
            # script can take the whole budget, and a warm-up that tunes nothing is no use
            if over_budget():
                raise kf.KernelForgeError("the warm-up's time budget went to hotter "
                                          + ("work" if kind == "chain" else
                                             "signatures (--time-budget)"))
            with _jobs.bypass():
                if kind == "chain":
                    results[key] = {"job_dir": write_chain_from_captures(p, take, plan)}
                    continue
                caps = take(key)
                if not caps:
                    raise kf.KernelForgeError("not called after the ranking")
                results[key] = {"job_dir": _tuner.write_job_from_captures(
                    key, caps, plan["search"], plan.get("random_inputs", 3))}
        except Exception as e:  # reported in the table, not fatal for the other jobs
            results[key] = {"error": str(e)}
    with open(out, "w") as f:
        json.dump(dict(results, deadline=deadline), f)


def chain_capture_keys(c: dict) -> list[str]:
    """The signatures whose real calls a chain job needs: the head's (its inputs), and each
    member's that reads an external (where the external is taken from)."""
    keys = [c["keys"][0]]
    for k, m in enumerate(c["spec"]["members"]):
        if any(r[0] == "ext" for r in m["inputs"]):
            keys.append(c["keys"][k])
    return keys


def write_chain_from_captures(c: dict, take, plan: dict) -> str:
    """A chain job from real calls: the head's captured inputs, each external from the first
    member call that reads it (eager's outputs are computed from these, so they agree)."""
    from . import _chainjobs, _jobs

    spec = c["spec"]
    head = take(c["keys"][0])
    ext_src = {}
    for k, m in enumerate(spec["members"]):
        for i, r in enumerate(m["inputs"]):
            if r[0] == "ext" and r[1] not in ext_src:
                ext_src[r[1]] = (c["keys"][k], i)
    calls = []
    for n, h in enumerate(head):
        ext = []
        for e in range(spec["n_ext"]):
            caps = take(ext_src[e][0])
            if n >= len(caps):
                break
            ext.append(caps[n][ext_src[e][1]])
        if len(ext) == spec["n_ext"]:
            calls.append(list(h) + ext)
    if not calls:
        raise _jobs.NotTunable("its members were not called in the capture run")
    job_dir = _jobs.new_job_dir("kforge::chain", spec["sig_hex"][-16:])
    try:
        _chainjobs.write_chain_job(job_dir, c, calls, recorded=[True] * len(calls),
                                   random_inputs=plan.get("random_inputs", 3), search=plan["search"])
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise
    return job_dir


def _per_call_us(row: dict) -> float:
    """A row's time per call as its time_ms counts it (a preempted sample clipped, as the total
    a chain's share is of), its mean eager sample while it has no calls counted."""
    if row.get("calls", 0) > 0 and row.get("time_ms") is not None:
        return max(1000.0 * row["time_ms"] / row["calls"], 0.0)
    return max(row.get("eager_us") or 0.0, 0.0)


def chain_candidates(chains: list[dict], rows: list[dict], min_share: float,
                     max_chains: int) -> list[dict]:
    """The hottest fusable chains: share = calls x the fused members' time per call (their rows'
    time_ms / calls), over the tunable time of the rows (steady_rows' basis); at least min_share,
    at most max_chains (0: no limit). A chain whose spec head writes in place is left out: the
    plugin does not serve those yet. Chains whose fusable prefixes are the same spec (add -> LN, recorded alone and as the
    start of add -> LN -> add -> LN) are one job, with their calls summed; so are the recorded
    chains that hold a spec's members further in (the RMSNorm after a residual add that the next
    cast keeps out of that chain's spec), since the spec's kernel serves those calls too, unless
    their own spec holds them (then its kernel does)."""
    from ._chainjobs import readable, spec_keys

    by_key = {r["key"]: r for r in rows}
    total = sum(r["time_ms"] for r in rows if r["intercepted"] and not r.get("untunable"))

    def eligible(c):
        return c.get("spec") and not (c.get("writes") or [False] * 2)[c.get("spec_first", 0)]

    def holds(outer, keys):
        n = len(keys)
        return any(outer[i:i + n] == keys for i in range(len(outer) - n + 1))

    merged = {}
    for c in chains:
        spec = c.get("spec")
        if not eligible(c):
            continue
        if spec["sig_hex"] in merged:
            merged[spec["sig_hex"]]["calls"] += c["calls"]
        else:
            merged[spec["sig_hex"]] = dict(c)
    for c in merged.values():
        keys, n = spec_keys(c), len(c["spec"]["members"])
        for d in chains:
            dk, ds = d.get("keys") or [], (d.get("spec") or {}).get("sig_hex")
            # not when d's own spec holds these members: its kernel serves them (a norm joined
            # by its weight's cast over the norm recorded alone in the first forward)
            if (ds != c["spec"]["sig_hex"] and holds(dk, keys)
                    and not (eligible(d) and holds(spec_keys(d), keys))):
                c["calls"] += d["calls"]
    out = []
    for c in merged.values():
        spec = c["spec"]
        keys = spec_keys(c)
        us = sum(_per_call_us(by_key[k]) for k in keys if k in by_key)
        time_ms = c["calls"] * us / 1000.0
        share = time_ms / total if total > 0 else 0.0
        if share < min_share:
            continue
        out.append({"op": "kforge::chain", "signature": readable(spec), "spec": spec,
                    "keys": keys, "id": c["id"], "row_key": f"chain:{c['id']}",
                    "calls": c["calls"], "time_ms": time_ms, "share": share,
                    "eager_us": us})
    out.sort(key=lambda c: -c["time_ms"])
    return out[:max_chains] if max_chains else out


def _child(argv: list[str]) -> int:
    if argv[0] == "record":
        return _child_record(argv[1], argv[2:])
    if argv[0] == "rank":
        return _child_record(argv[2], argv[3:], argv[1])
    if argv[0] == "capture":
        return _child_capture(argv[1], argv[2], argv[3:])
    if argv[0] == "check":
        from ._modelcheck import child_check

        return child_check(argv[1], argv[2:])
    raise SystemExit(f"unknown step {argv[0]}")


# ---- the parent: kforge warmup ----

def _step(step: list[str], script_cmd: list[str], log) -> int:
    env = dict(os.environ)
    env.pop("KFORGE_TUNE", None)  # warmup tunes here, not in the children
    env.pop("KFORGE_DISABLE", None)
    cmd = [sys.executable, "-m", "kernel_forge._warmup", *step, *script_cmd]
    log(f"kforge warmup: running {' '.join(script_cmd)} ({step[0]})")
    return subprocess.run(cmd, env=env).returncode


def _child_step(step: str, arg_path: str, arg: dict, out: str, script_cmd: list[str], log) -> int:
    """A child step that takes a JSON argument file (rank: the options, capture: the plan)."""
    with open(arg_path, "w") as f:
        json.dump(arg, f)
    return _step([step, arg_path, out], script_cmd, log)


WRITE_SHARE = 0.3  # of the budget left after the capture run, at most, for writing jobs
RANK_AFTER_FORWARDS = 5  # the recording run plans after this many module forwards, then captures
MIN_FIRST_SHARE = 0.1  # of the time budget, at least, for the hottest job's search
RAMP_SHARE = 0.75  # of the time budget for the first pass (start points), the rest for deeper ones
MIN_JOB_S = 2.5  # a search's own floor: worker start and a few candidates (most bests are the first)
# Less than this left is a spent budget: the worker reads --time-budget 0 as none, so a remainder
# printed as "0.0" ran a whole search (likely how one ResNet-50 search took 40 s of a 60 s budget).
MIN_BUDGET_S = 0.1
# A signature whose calls an inserted chain kernel runs (the chain's calls at least this part of
# the signature's) gets no search of its own: a kernel for it would serve the calls the chain
# does not complete, and the budget goes to signatures no kernel serves yet.
CHAIN_COVERS = 0.8


def _members_served_fraction(keys: list, op_rows: dict, rec_us: dict) -> float | None:
    """The part of a chain's members' eager time left once the kernels this warm-up inserted
    for them (`keys`, their rows in `op_rows`) serve them: each member's own job says how much
    faster its kernel is (best / eager, measured side by side there), weighted by its share of
    the members' time in the recording (`rec_us`: key -> recorded eager us). A ratio, because the
    chain's job times its members differently (one after the other, a member's input still in
    the L2): subtracting the op jobs' microseconds from it once left a 2.6 us target for a
    group norm the op job timed at 74 us. None where no member has a kernel."""
    def weight(k):  # an untimed row says -1
        for us in (rec_us.get(k), (op_rows.get(k) or {}).get("eager_us")):
            if us and us > 0:
                return us
        return 0.0

    def factor(m):
        if m and m["status"] == "inserted" and m.get("best_us") and m.get("eager_us"):
            return min(1.0, m["best_us"] / m["eager_us"])
        return None

    total = sum(weight(k) for k in keys)
    if total <= 0 or all(factor(op_rows.get(k)) is None for k in keys):
        return None
    return sum(weight(k) * (factor(op_rows.get(k)) or 1.0) for k in keys) / total


def weigh_chain_job(keys: list, op_rows: dict, job_dir: str, rec_us: dict) -> float | None:
    """A chain's job weighed against its members as the served process runs them without it: its
    eager time scaled by what the kernels this warm-up inserted for its members save
    (_members_served_fraction). A group norm's own kernel, 3x over eager, can beat the chain that
    beats the members run eager; the process's chain speed guard judges the same way. The job's
    new eager time (the old one kept as members_eager_us), or None where no member has a kernel."""
    frac = _members_served_fraction(keys, op_rows, rec_us)
    if frac is None:
        return None
    path = os.path.join(job_dir, "job.json")
    with open(path) as f:
        job = json.load(f)
    job["members_eager_us"] = job["eager_us"]
    job["eager_us"] = max(job["eager_us"] * frac, job.get("call_floor_us") or 0.0, 1e-3)
    with open(path, "w") as f:
        json.dump(job, f, indent=1)
    return job["eager_us"]


def members_beat_chain(row: dict, keys: list, op_rows: dict, rec_us: dict) -> float | None:
    """An inserted chain's row weighed again once the warm-up is done: the members' time with
    every kernel it inserted for them (those searched after the chain too), when the chain's
    kernel is not 3% faster than that (the worker's own bar); else None."""
    frac = _members_served_fraction(keys, op_rows, rec_us)
    try:
        with open(os.path.join(row["job_dir"], "job.json")) as f:
            job = json.load(f)
    except (OSError, ValueError, TypeError):
        return None
    members = job.get("members_eager_us", job.get("eager_us"))
    if frac is None or not members or not row.get("best_us"):
        return None
    own = max(members * frac, 1e-3)
    return own if row["best_us"] * 1.03 > own else None


def _disable_entry(cache_dir: str, key: str, why: str) -> str:
    """Mark the cache entry `key` disabled, with `why`: '' or the error."""
    import ctypes

    from . import _native

    err = ctypes.create_string_buffer(1024)
    code = _native.lib().kf_cache_dir_set_disabled(cache_dir.encode(), key.encode(), 1,
                                                    why.encode(), err, len(err))
    return (err.value.decode() or _native.status_str(code)) if code else ""


def job_time_budget(left: float, share: float, rest: list[float]) -> float:
    """A job's part of the time `left`: in proportion to its share of the recorded time among the
    jobs still to run (`rest`, its own included), so the hottest signatures search longest; time a
    search leaves unused goes to the later ones. At least MIN_JOB_S, never more than `left` (under
    MIN_BUDGET_S: nothing left to search with)."""
    if left < MIN_BUDGET_S:
        return 0.0
    total = sum(rest)
    part = left * share / total if total > 0 else left / max(len(rest), 1)
    return min(left, max(part, MIN_JOB_S))


def make_plan(rec: dict, opts: dict) -> dict:
    """From a record (record_doc's) and the warm-up's options: the steady rows and the setup left
    out, the hot signatures (cands) and chains (chain_cands) in priority order (prio: id -> its
    priority), the rows set apart and why, the device bandwidth, and the plan the capture step
    takes (None: nothing to tune). The recording run makes it too, to capture in the same run:
    the same record gives the same plan."""
    import kernel_forge as kf
    from . import _tuner

    rows, setup = _tuner.steady_rows(rec["rows"], rec.get("window"))
    bw = rec["bandwidth_gbs"]  # each row ranked against its own device's
    wanted = {o if "::" in o else f"aten::{o}" for o in opts["ops"]}
    min_share = opts["min_share"]
    cands = _tuner.hot_candidates(rows, opts["min_calls"], min_share, set(), bw)
    if wanted:
        cands = [r for r in cands if r["op"] in wanted]
    if opts["max_jobs"]:
        cands = cands[:opts["max_jobs"]]
    chosen = {r["key"] for r in cands}
    skipped = [r for r in rows if r["intercepted"] and r["key"] not in chosen
               and (r.get("untunable") or r["share"] >= min_share)]
    out = {"rows": rows, "setup": setup, "cands": cands, "skipped": skipped, "bw": bw,
           "untunable": [r for r in skipped if r.get("untunable")], "plan": None, "prio": {},
           "chain_cands": chain_candidates(rec.get("chains") or [], rows, min_share,
                                           opts["max_chains"])
           if opts["chains"] and not wanted else []}
    chain_cands = out["chain_cands"]
    if not cands and not chain_cands:
        return out
    search = {"iterations": opts["iterations"], "seed": opts["seed"],
              "margin": opts["margin"], "proposer": opts["proposer"],
              "cache_dir": opts.get("cache_dir") or kf.cache_dir()}
    if opts.get("stagnation") is not None:
        search["stagnation"] = opts["stagnation"]
    # signatures and chains in one priority order, for writing jobs and for searching: a hot
    # chain must not wait behind every op row for the budget
    prio = {id(r): _tuner.priority(r, bw) for r in cands}
    by_key = {r["key"]: r for r in rows}
    prio.update({id(c): _tuner.chain_priority(c, by_key, bw) for c in chain_cands})
    out["prio"] = prio
    out["plan"] = {"captures": opts["captures"], "search": search,
                   "jobs": [{"key": r["key"], "signature": r["signature"], "prio": prio[id(r)]}
                            for r in cands],
                   "chains": [dict({k: c[k] for k in ("spec", "keys", "id", "row_key")},
                                   prio=prio[id(c)]) for c in chain_cands]}
    if opts.get("time_budget"):
        out["plan"]["time_budget"] = opts["time_budget"]
    return out


def _same_plan(path: str, plan: dict) -> bool:
    """Whether the recording run's plan (its file) is the parent's: the same jobs and chains."""
    try:
        with open(path) as f:
            theirs = json.load(f)
    except (OSError, ValueError):
        return False
    return ([j["key"] for j in theirs.get("jobs", [])] == [j["key"] for j in plan["jobs"]]
            and [c["id"] for c in theirs.get("chains", [])] == [c["id"] for c in plan["chains"]])


def job_bytes(job_dir: str):
    """The bytes a job's kernel moves (its job.json's bytes_moved), or None."""
    try:
        with open(os.path.join(job_dir, "job.json")) as f:
            n = json.load(f).get("bytes_moved")
    except (OSError, ValueError, AttributeError):
        return None
    return n if isinstance(n, (int, float)) and n > 0 else None


def warmup(script_cmd: list[str], *, iterations: int = 50, time_budget: float = 0,
           ops: list[str] | None = None, min_share: float = 0.01, min_calls: int = 1,
           max_jobs: int = 0, captures: int = 3, seed: int = 1, margin: float = 0.03,
           stagnation: int | None = None,
           log=print, work_dir=None,
           chains: bool = True, max_chains: int = 0,
           proposer: str | None = None, llm_budget_usd: float | None = None,
           llm_max_requests: int | None = None, check: bool = True) -> dict:
    """The whole warm-up; returns {"rows": [...], "cache_dir": ...} (the final table's rows)."""
    import tempfile

    import kernel_forge as kf
    from . import _jobs, _text, _tuner

    work = work_dir or tempfile.mkdtemp(prefix="kforge-warmup-")
    t0 = time.monotonic()
    if proposer is None:
        proposer = "mixed" if os.environ.get("KFORGE_LLM_URL") else "builtin"
    opts = {"iterations": iterations, "seed": seed, "margin": margin, "proposer": proposer,
            "stagnation": stagnation,
            "cache_dir": kf.cache_dir(), "ops": list(ops or []), "min_share": min_share,
            "min_calls": min_calls, "max_jobs": max_jobs, "chains": chains,
            "max_chains": max_chains, "captures": captures,
            # from the end of the script's run: writing jobs (device-to-host copies, files), then
            # the searches (write_jobs sets the deadline)
            "time_budget": time_budget or None}
    stats_path = os.path.join(work, "record.json")
    code = _child_step("rank", os.path.join(work, "opts.json"), opts, stats_path, script_cmd, log)
    if not os.path.exists(stats_path):
        raise kf.KernelForgeError(f"the recording run failed (exit {code}): nothing recorded")
    if code:
        log(f"kforge warmup: the script exited with status {code} in the recording run; "
            "tuning what was recorded")
    with open(stats_path) as f:
        rec = json.load(f)
    p = make_plan(rec, opts)
    setup, cands, chain_cands = p["setup"], p["cands"], p["chain_cands"]
    skipped, untunable, plan = p["skipped"], p["untunable"], p["plan"]
    # rank the work the script repeats (what ran inside module forwards), not its setup
    if rec.get("window") is not None:
        log(f"kforge warmup: ranking what ran inside {rec['forwards']} module forward"
            f"{'' if rec['forwards'] == 1 else 's'} ({len(setup)} signatures seen only outside "
            "them, the script's setup, left out)")
    else:
        log("kforge warmup: no nn.Module forward ran: ranking the whole recording")
    log(f"kforge warmup: {len(cands)} hot signatures to tune (share of the tunable time >= "
        f"{100 * min_share:g}%); {len(untunable)} that can never be tuned set apart")
    if p["bw"]:
        ranked = _tuner.rows_by_device(p["rows"])

        def device_line(d, gbs):
            on = ranked.get(d, [])
            hottest = f", hottest {_text.shorten(on[0]['signature'], 40)}" if on else ""
            return f"{d} {gbs:.0f} GB/s ({len(on)} rows{hottest})"

        log("kforge warmup: priority is time x headroom to the copy bandwidth of each row's device: "
            + "; ".join(device_line(d, v) for d, v in sorted(p["bw"].items())))
    for r in sorted(untunable, key=lambda r: -r["time_ms"])[:5]:
        log(f"  not tunable: {_text.shorten(r['signature'], 70)}: {r['untunable']}")
    if chain_cands:
        log(f"kforge warmup: {len(chain_cands)} hot fusable chain"
            f"{'' if len(chain_cands) == 1 else 's'} to tune as fused kernels (--no-chains: none)")
    # the cache served the recording run already (an earlier warm-up's entries): checked too
    served = any(r.get("served") for r in rec["rows"])
    if plan is None:
        return {"rows": [], "cache_dir": kf.cache_dir(), "skipped": skipped, "setup": setup,
                "check": check_model(script_cmd, work, log) if check and served else None}

    llm_args = []
    if llm_budget_usd is not None:
        llm_args += ["--llm-budget-usd", repr(float(llm_budget_usd))]
    if llm_max_requests is not None:
        llm_args += ["--llm-max-requests", str(int(llm_max_requests))]
    prio = p["prio"]
    work_list = sorted(cands + chain_cands, key=lambda r: -prio[id(r)])
    jobs_path = stats_path + ".jobs.json"
    if os.path.exists(jobs_path) and _same_plan(stats_path + ".plan.json", plan):
        log(f"kforge warmup: captured in the recording run (after {RANK_AFTER_FORWARDS} module "
            "forwards): no second run")
    else:
        jobs_path = os.path.join(work, "jobs.json")
        code = _child_step("capture", os.path.join(work, "plan.json"), plan, jobs_path, script_cmd,
                           log)
        if not os.path.exists(jobs_path):
            raise kf.KernelForgeError(f"the capture run failed (exit {code}): no jobs written")
    with open(jobs_path) as f:
        jobs = json.load(f)
    deadline = jobs.pop("deadline", None)

    from . import _remote

    remote = _remote.get() if os.environ.get("KFORGE_REMOTE_CACHE") else None
    out_rows, deferred, chain_rows = [], [], []
    covered = {}  # op signature key -> the inserted chains that run its calls
    op_rows = {}  # op signature key -> its row once searched: a chain's members' own kernels
    rec_us = {r["key"]: r.get("eager_us") for r in p["rows"]}  # each signature's recorded time

    def in_chain(r):
        """The hottest inserted chain running r's calls, when those chains together run enough
        of them (one signature may sit in several: the norm after a residual add, the first one)."""
        cs = covered.get(r["key"], []) if r["op"] != "kforge::chain" else []
        if not cs or sum(c["calls"] for c in cs) < CHAIN_COVERS * r["calls"]:
            return None
        return max(cs, key=lambda c: c["calls"])

    def set_best(row, res):
        row.update(entry_key=res.get("cache_key"), best_us=res.get("best_us"),
                   speedup=res.get("speedup"), roofline_us=res.get("roofline_us") or None)
        if res.get("best_us") and res.get("roofline_us"):
            row["roofline_pct"] = 100 * res["roofline_us"] / res["best_us"]

    def run_job(i, r, row, j, lease):
        try:
            search_one(i, r, row, j)
        finally:  # after publishing: a process that takes it over then finds the entry
            if lease:
                lease.release()

    # Under a time budget, two passes: first each op job's template start points (the worker's
    # --starts-only: most winners are one), hottest first, in RAMP_SHARE of the budget, so that
    # every hot signature gets a kernel; then deeper searches, hottest first, in what is left.
    # A chain is searched whole in the first pass: its start points seldom win (the UNet's
    # norm chains went from 18-43 us there to 11-28 us), and its kernel, once inserted, spares
    # its members their searches in that pass; they get their start points after it (insure).
    ramp_until = deadline and deadline - (1 - RAMP_SHARE) * time_budget
    ramped = []  # (r, row, j) whose ramp pass ran: candidates for a deep search
    covered_rows = []  # (i, r, row, j, chain) of the members inserted chains run: insure()

    def search_one(i, r, row, j, budget=None):
        extra = []
        if time_budget:
            if budget is None:
                left = ramp_until - time.time()  # write_jobs set the deadline: the plan has the budget
                if i == 0:  # the hottest signature is searched, for a tenth of the budget at least
                    left = max(left, MIN_FIRST_SHARE * time_budget)
                rest = [c["share"] for c in work_list[i:] if not in_chain(c)
                        and "error" not in jobs.get(c.get("row_key") or c["key"], {"error": 1})]
                budget = job_time_budget(left, r["share"], rest)
            if budget < MIN_BUDGET_S:
                row["status"] = "not tuned: time budget spent"
                return
            extra = (["--starts-only"] if r["op"] != "kforge::chain" else []) + \
                ["--time-budget", f"{budget:.1f}"]
        bar = _jobs.ProgressBar(f"[{i + 1}/{len(work_list)}] {r['signature']}")
        try:
            res = _jobs.run_worker(j["job_dir"], extra_args=llm_args + extra, on_progress=bar)
        except kf.KernelForgeError as e:
            bar.close()
            row["status"] = f"worker failed: {e}"
            return
        bar.close()
        _remote.publish(res, kf.cache_dir(), r.get("cache_key"))
        row.update(eager_us=res["eager_us"], iterations=res["iterations"], status=res["status"],
                   wall_s=res.get("wall_s", 0), bytes_moved=job_bytes(j["job_dir"]),
                   llm=res.get("llm"), stop_reason=res.get("stop_reason", ""),
                   detail=res.get("detail", ""))
        set_best(row, res)
        if time_budget and res.get("stop_reason") == "start candidates evaluated" and \
                res["status"] in ("inserted", "no_faster_kernel"):
            ramped.append((r, row, j))

    def insure():
        """Between the two passes, in the time left: the start points of the members that inserted
        chains run, hottest first, so that each has its own kernel where its chain's is not served
        (a dropped head, or the model check turning chain kernels off: timm PVT-v2's four
        add -> layer_norm chains on an H100, whose members then ran eager). The chain is not
        weighed against them (members_beat_chain): on the CPU tests' small models that turned
        chains off which serve there, a comparison not yet checked against the model's time."""
        deep = [t[0]["share"] for t in ramped if in_chain(t[0]) is None]
        for k, (i, r, row, j, chain) in enumerate(covered_rows):
            budget = job_time_budget(deadline - time.time(), r["share"],
                                     [t[1]["share"] for t in covered_rows[k:]] + deep)
            if budget < MIN_BUDGET_S:
                return
            search_one(i, r, row, j, budget)
            row["detail"] = (f"its calls run in the kernel of {chain} where that is served; "
                             + (row.get("detail") or "")).rstrip("; ")

    def deepen():
        """The second pass: the ramped jobs, hottest first, each for its share of the time left,
        replaying its start points' timings (--timings-from), a kernel inserted only where it
        beats the ramp's by 1% (--better-than)."""
        todo = [t for t in ramped if in_chain(t[0]) is None]
        for k, (r, row, j) in enumerate(todo):
            budget = job_time_budget(deadline - time.time(), r["share"],
                                     [t[0]["share"] for t in todo[k:]])
            if budget < MIN_BUDGET_S:
                return
            extra = ["--timings-from", j["job_dir"], "--time-budget", f"{budget:.1f}"]
            if row.get("status") == "inserted" and row.get("best_us"):
                extra += ["--better-than", repr(row["best_us"])]
            bar = _jobs.ProgressBar(f"[deeper {k + 1}/{len(todo)}] {r['signature']}")
            try:
                res = _jobs.run_worker(j["job_dir"], extra_args=llm_args + extra, on_progress=bar)
            except kf.KernelForgeError as e:
                bar.close()
                row["detail"] = (row.get("detail", "") + f"; deeper search failed: {e}").lstrip("; ")
                continue
            bar.close()
            row["iterations"] += res["iterations"]
            row["wall_s"] = row.get("wall_s", 0) + res.get("wall_s", 0)
            row["stop_reason"] = res.get("stop_reason", "")
            if res["status"] != "inserted":
                continue
            _remote.publish(res, kf.cache_dir(), r.get("cache_key"))
            before = row.get("best_us") if row.get("status") == "inserted" else None
            row["status"] = "inserted"
            set_best(row, res)
            if before:
                row["detail"] = (row.get("detail", "") + f"; deeper search: {before:.1f} -> "
                                 f"{res['best_us']:.1f} us").lstrip("; ")

    for i, r in enumerate(work_list):
        if r["op"] == "kforge::chain":  # a chain row: ops in order; no fleet cache for chains yet
            row = {"op": r["op"], "signature": r["signature"], "key": r["row_key"],
                   "share": r["share"], "calls": r["calls"], "eager_us": r.get("eager_us"),
                   "best_us": None, "speedup": None, "roofline_pct": None, "iterations": 0,
                   "status": "", "job_dir": None, "wall_s": 0.0, "chain": True,
                   "prio": prio[id(r)]}
            j = jobs.get(r["row_key"], {"error": "no job written"})
            if "error" in j:
                row["status"] = "not tuned: " + j["error"]
            else:
                row["job_dir"] = j["job_dir"]
                own = weigh_chain_job(r["keys"], op_rows, j["job_dir"], rec_us)
                search_one(i, r, row, j)
                if own is not None:  # what the chain has to beat, said with the result
                    row["detail"] = (f"against its members with their own kernels ({own:.1f} us); "
                                     + (row.get("detail") or "")).rstrip("; ")
                if row["status"] == "inserted":
                    for k in set(r["keys"]):
                        covered.setdefault(k, []).append(r)
                    chain_rows.append((row, r))
            out_rows.append(row)
            continue
        row = {"op": r["op"], "signature": r["signature"], "key": r["key"], "share": r["share"],
               "calls": r["calls"], "eager_us": r.get("eager_us"), "best_us": None,
               "speedup": None, "roofline_pct": None, "iterations": 0, "status": "",
               "job_dir": None, "wall_s": 0.0, "prio": prio[id(r)]}
        j = jobs.get(r["key"], {"error": "no job written"})
        chain = in_chain(r)
        if chain is not None:
            row.update(status=f"not tuned: its calls run in the kernel of {chain['signature']}",
                       job_dir=j.get("job_dir"))
            out_rows.append(row)
            if "error" not in j:
                covered_rows.append((i, r, row, j, chain["signature"]))
            continue
        if remote is not None and r.get("cache_key") and _remote.pull_one(kf.cache_dir(),
                                                                          r["cache_key"]):
            # published meanwhile (the capture run may have been served it: nothing captured)
            row.update(status="from the fleet cache", job_dir=j.get("job_dir"))
            out_rows.append(row)
            continue
        if "error" in j:
            row["status"] = "not tuned: " + j["error"]
            out_rows.append(row)
            continue
        row["job_dir"] = j["job_dir"]
        lease = None
        if remote is not None and r.get("cache_key"):
            state, lease = _remote.claim(remote, kf.cache_dir(), r["cache_key"])
            if state in ("fleet", "none"):
                row["status"] = ("from the fleet cache" if state == "fleet" else
                                 f"not tuned: searched in the fleet ({lease})")
                out_rows.append(row)
                continue
            if state == "held":  # another process searches it: pick its winner up later
                log(f"kforge warmup: {_text.shorten(r['signature'], 60)} is being tuned by "
                    f"{lease}; waiting for its entry")
                deferred.append((i, r, row, j))
                out_rows.append(row)
                continue
        run_job(i, r, row, j, lease)
        op_rows[r["key"]] = row
        out_rows.append(row)
    # the signatures other processes were tuning: their entry, or their lease expired (a crashed
    # tuner) and this process searches it
    until = time.monotonic() + _remote.settings()["wait_s"]
    while deferred:
        for item in list(deferred):
            i, r, row, j = item
            state, lease = _remote.claim(remote, kf.cache_dir(), r["cache_key"])
            if state in ("fleet", "none"):
                row["status"] = ("from the fleet cache" if state == "fleet" else
                                 f"not tuned: searched in the fleet ({lease})")
            elif state == "held" and time.monotonic() > until:
                row["status"] = "not tuned: another process held its lease (KFORGE_REMOTE_WAIT)"
            elif state == "held":
                continue
            else:
                run_job(i, r, row, j, lease)
            deferred.remove(item)
        if deferred:
            time.sleep(min(1.0, remote.cfg["poll_s"]))
    if time_budget:
        insure()
        deepen()
    # a chain inserted before kernels for its members were: the members with those may be faster
    for row, r in chain_rows:
        own = members_beat_chain(row, r["keys"], op_rows, rec_us) if row["status"] == "inserted" else None
        if own is None or not row.get("entry_key"):
            continue
        why = (f"slower than its members with their own kernels ({row['best_us']:.1f} us vs "
               f"{own:.1f} us)")
        err = _disable_entry(kf.cache_dir(), row["entry_key"], why)
        if err:
            row["detail"] = (row.get("detail", "") + f"; found {why}, not disabled: {err}").lstrip("; ")
            continue
        row["status"] = "disabled"
        row["detail"] = (row.get("detail", "") + "; " + why).lstrip("; ")
    for j in jobs.values():  # every one written, searched or not: the next model needs the disk
        if isinstance(j, dict):
            _jobs.drop_cases(j.get("job_dir"))
    verdict = None
    if check and (served or any(r["status"] == "inserted" for r in out_rows)):
        verdict = check_model(script_cmd, work, log)
        gone = {e["key"]: verdict.get("why", "") for e in verdict.get("disabled", [])}
        for row in out_rows:
            if row.get("entry_key") in gone and row["status"] == "inserted":
                row["status"] = "disabled"
                row["detail"] = (row.get("detail", "") + "; " + gone[row["entry_key"]]).lstrip("; ")
    return {"rows": out_rows, "cache_dir": kf.cache_dir(), "skipped": skipped, "setup": setup,
            "bandwidth_gbs": p["bw"], "wall_s": time.monotonic() - t0, "check": verdict}


def check_model(script_cmd: list[str], work: str, log) -> dict:
    """The model check (_modelcheck): the script once more with the cache as it now is (again,
    while its forwards give too few rounds and time is left); disables what made its forwards
    slower as a whole. Its verdict, as _modelcheck.apply says it."""
    import kernel_forge as kf
    from . import _modelcheck

    t = time.monotonic()
    res = None
    for run in range(_modelcheck.MAX_RUNS):
        out = os.path.join(work, f"check{run}.json")
        code = _step(["check", out], script_cmd, log)
        try:
            with open(out) as f:
                got = json.load(f)
        except (OSError, ValueError) as e:
            log(f"kforge warmup: the model check run failed (exit {code}, {e})")
            break
        res = _modelcheck.merge(res, got)
        if not _modelcheck.complete_rounds(got["rows"], got["arms"]) or \
                not _modelcheck.wants_more(res, time.monotonic() - t):
            break  # a run that timed no whole round: another would not either
    if res is None:
        return {"keep": "all", "why": "the check run failed", "disabled": [], "errors": [],
                "ms": {}, "rounds": 0}
    v = _modelcheck.apply(res, kf.cache_dir(), _disable_entry)
    ms = ", ".join(f"{_modelcheck.LABELS[a]} {m:.3f} ms" for a, m in v["ms"].items())
    log(f"kforge warmup: model check, {v['rounds']} rounds of forwards in {res['runs']} run"
        f"{'' if res['runs'] == 1 else 's'} ({time.monotonic() - t:.0f} s"
        f"{', GPU timeline' if res.get('cuda') else ''}): median {ms or 'no forward timed'}")
    said = "; ".join(f"{_modelcheck.LABELS[c['faster']]} / {_modelcheck.LABELS[c['than']]} "
                     f"{c['ratio']:.3f}x faster, p {c['p']:.3f}" for c in v["compared"])
    if v["keep"] == "all":
        v["said"] = (v.get('why') or 'every kernel kept') + (f" ({said})" if said else "")
    else:
        v["said"] = (f"kept {_modelcheck.LABELS[v['keep']]} ({said}); disabled {len(v['disabled'])} "
                     f"entr{'y' if len(v['disabled']) == 1 else 'ies'} the run served")
    v["said"] += f"; medians {ms}" if ms else ""
    log(f"kforge warmup: model check: {v['said']}")
    for e in v["errors"]:
        log(f"  could not disable {e['key']}: {e['error']}")
    return v


def cost_table(rows: list[dict]) -> str:
    """Per job: the model's calls, requests, tokens and cost; and the total."""
    from ._text import fmt_table, shorten

    body, tot = [], [0, 0, 0, 0, 0.0]
    for r in rows:
        u = r.get("llm")
        if not u:
            continue
        vals = [u["calls"], u["requests"], u["input_tokens"], u["output_tokens"], u["cost_usd"]]
        tot = [a + b for a, b in zip(tot, vals)]
        price = "" if u.get("price_known") else " (no price)"
        body.append([shorten(r["signature"], 60), u["model"], str(u["calls"]), str(u["requests"]),
                     str(int(u["input_tokens"])), str(int(u["output_tokens"])),
                     f"${u['cost_usd']:.4f}{price}"])
    body.append(["total", "", str(tot[0]), str(tot[1]), str(int(tot[2])), str(int(tot[3])),
                 f"${tot[4]:.4f}"])
    return fmt_table(body, ["signature", "model", "calls", "requests", "tokens in", "tokens out",
                             "cost"], ["<", "<", ">", ">", ">", ">", ">"])


def status_text(r: dict) -> str:
    """A row's status; why, when no candidate was correct (the first failure, its member) or no
    template took a chain (the member it could not bind, and why)."""
    from ._text import shorten

    if (r["status"] == "no_correct_kernel" or
            (r["status"] == "no_template" and r["op"] == "kforge::chain")) and r.get("detail"):
        return shorten(f"{r['status']}: {r['detail']}", 240)
    return r["status"]


def table(rows: list[dict]) -> str:
    from ._text import fmt_table, shorten

    body = []
    for r in rows:
        f = lambda v, fmt: fmt.format(v) if v is not None else "-"  # noqa: E731
        body.append([r["op"].split("::")[-1], shorten(r["signature"], 60),
                     f"{100 * r['share']:.1f}%", f(r["eager_us"], "{:.1f}"), f(r["best_us"], "{:.1f}"),
                     f(r["speedup"], "{:.2f}x"), f(r["roofline_pct"], "{:.0f}%"),
                     str(r["iterations"]), f"{r['wall_s']:.0f}s", status_text(r)])
    return fmt_table(body, ["op", "signature", "share", "eager us", "best us", "speedup",
                             "roofline", "iters", "time", "status"],
                      ["<", "<", ">", ">", ">", ">", ">", ">", ">", "<"])


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
