"""Kernel Forge: serve verified, specialized kernels in place of eager ATen kernels.

Importing the package loads the plugin: from then on the ops of the intercept list are recorded
and, when a verified kernel exists for a call's exact signature, served by it; every other call
runs the original kernel, unchanged.
"""

from __future__ import annotations

import ctypes
import os

from ._native import KernelForgeError, library_path
from . import _native

__all__ = [
    "KernelForgeError", "library_path", "load", "enable", "disable", "enabled",
    "enable_chains", "disable_chains", "chains_enabled",
    "intercepted_ops", "ops_info", "stats", "chains", "chain_entries", "add_chain_kernel", "signature_table", "reset_stats", "set_recording",
    "signature_key", "add_kernel", "cache_entries", "reload_cache", "cache_dir", "tune",
    "tuner_status", "__version__",
]

__version__ = "0.1.0"


def load() -> None:
    """Load the plugin into this process (idempotent; `import kernel_forge` already does it)."""
    _native.lib()


def enable() -> None:
    """Serve kernels and record calls (the default unless KFORGE_DISABLE=1 was set at load)."""
    _native.lib().kf_set_enabled(_native.runtime(), 1)


def disable() -> None:
    """Send every intercepted call straight to the original kernel (an atomic switch)."""
    _native.lib().kf_set_enabled(_native.runtime(), 0)


def enabled() -> bool:
    return bool(_native.lib().kf_enabled(_native.runtime()))


def enable_chains() -> None:
    """Start chain kernels at their heads again (the default)."""
    _native.lib().kf_set_chains_enabled(_native.runtime(), 1)


def disable_chains() -> None:
    """Start no chain kernel: the members run as without chain entries (their own kernels or
    eager); a chain already started ends as it would. Per-op kernels keep serving."""
    _native.lib().kf_set_chains_enabled(_native.runtime(), 0)


def chains_enabled() -> bool:
    return bool(_native.lib().kf_chains_enabled(_native.runtime()))


def ops_info() -> dict:
    """The intercept list as registered: per op, the dispatch keys and why any was skipped."""
    return _native.take_json(_native.lib().kf_ops_json(_native.runtime()))


def intercepted_ops() -> list[str]:
    """Ops intercepted on at least one dispatch key, named as the dispatcher names them."""
    return [o["op"] for o in ops_info()["ops"] if o["keys"]]


def stats() -> list[dict]:
    """Recorded calls per signature, hottest first.

    Keys: op, device, signature, key, calls, served, fallback, time_ms (estimated from sampled
    timings), share (of the recorded time measured the same way: CUDA device time, or host time;
    the time of signatures evicted from the table, signature_table(), included),
    eager_us / served_us (mean sampled time per call, -1 when never sampled), intercepted (False
    for rows seen only by the op observer), time_source, servable, has_kernel, served_slower,
    stopped (why this process stopped serving the row's kernel: "slower", "launch_failed",
    "check_failed", "check_error"; "" when it did not).
    """
    doc = _native.take_json(_native.lib().kf_stats_json(_native.runtime()))
    rows = doc["rows"]
    # Device time (CUDA events) and host time are not comparable: each row's share is taken
    # among the rows measured the same way, evicted signatures' time included.
    evicted = doc.get("table", {}).get("evicted", {})
    totals = {basis: evicted.get(basis, {}).get("time_ms", 0.0) for basis in ("host", "device")}
    for r in rows:
        r["calls"] = int(r["calls"])
        r["served"] = int(r["served"])
        r["fallback"] = int(r["fallback"])
        basis = _time_basis(r)
        totals[basis] = totals.get(basis, 0.0) + r["time_ms"]
    for r in rows:
        total = totals[_time_basis(r)]
        r["share"] = r["time_ms"] / total if total > 0 else 0.0
    rows.sort(key=lambda r: (-r["time_ms"], -r["calls"], r["signature"]))
    return rows


def signature_table() -> dict:
    """The signature table behind stats(): `capacity` (slots, KFORGE_SIGNATURES), `occupied`,
    `dropped` (calls not recorded because no slot of their set could be recycled at that
    moment), and `evicted`: per time basis ("host", "device"), the `rows`, `calls`, `served`,
    `fallback` and estimated `time_ms` of cold signatures whose slots were recycled for new
    ones (their rows are gone from stats(); their time still counts in every `share`)."""
    doc = _native.take_json(_native.lib().kf_stats_json(_native.runtime()))
    table = dict(doc["table"])
    table["dropped"] = int(doc["dropped"])
    return table


def chains(min_calls: int = 3) -> list[dict]:
    """Recurring chains of intercepted calls, most frequent first: runs of servable calls on one
    thread in which each call after the first reads an output of an earlier one (plugin/chains.h).
    Recorded while recording is on (set_recording, KFORGE_RECORD=1, KFORGE_TUNE=1, `kforge run`,
    `kforge warmup`); a chain is listed once seen `min_calls` times.

    Keys: id, calls, ops, signatures and keys (one per member, in call order), inputs (per member,
    per tensor input: [member, output] when it is an earlier member's output, None when it comes
    from outside the chain), time_ms (calls x the members' mean sampled time per call, as stats()'
    time_ms counts it; members not sampled yet count 0), share (of the recorded time, stats()'s
    basis), status ("recorded": seen, not tuned), writes (per member: it writes a tensor
    argument in place), and spec: the chain as a job and a cache entry see it (docs/chains.md:
    its fusable prefix, per member op, signature, sig_hex and inputs as ["head", i] |
    ["member", m, o] | ["ext", e]; the chain's canonical bytes in spec["sig_hex"]; spec_first:
    the member it starts at, 1 when a head that writes in place is left out, later when an
    earlier member's external cannot be predicted at the head), or None with fusable_reason
    saying why. With a chain kernel attached, status is its entry's state ("checking",
    "served", "refused") and entry is chain_entries()'s row.
    """
    return _chains_of(min_calls)


def _chains_of(min_calls: int, stats_rows: list[dict] | None = None) -> list[dict]:
    """chains(), its times from `stats_rows` when given (a stats() of just now)."""
    doc = _native.take_json(_native.lib().kf_chains_json(_native.runtime(), int(min_calls)))
    entries = {e["sig_hex"]: e for e in chain_entries()}
    rows = {r["key"]: r for r in (stats() if stats_rows is None else stats_rows)}
    total = sum(r["time_ms"] for r in rows.values())
    out = []
    for ch in doc["chains"]:
        members = [rows.get(m["key"]) for m in ch["members"]]
        # each member's time per call as its row's time_ms counts it (a preempted sample
        # clipped), so that a chain's share is of the same total and at most its members'
        per_call_ms = sum(r["time_ms"] / r["calls"] for r in members if r and r["calls"] > 0)
        time_ms = ch["calls"] * per_call_ms
        out.append({
            "id": ch["id"], "calls": int(ch["calls"]),
            "ops": [r["op"] if r else "?" for r in members],
            "signatures": [r["signature"] if r else "(evicted)" for r in members],
            "keys": [m["key"] for m in ch["members"]],
            "inputs": [m["inputs"] for m in ch["members"]],
            "writes": [bool(m.get("writes")) for m in ch["members"]],
            "time_ms": time_ms, "share": time_ms / total if total > 0 else 0.0,
            "status": "recorded",
            "spec": ch.get("spec"), "spec_first": int(ch.get("spec_first", 0)),
            "fusable_reason": ch.get("fusable_reason"),
        })
        entry = entries.get((ch.get("spec") or {}).get("sig_hex"))
        if entry:  # a chain kernel is attached: checking, served or refused (and why)
            out[-1].update(status=entry["state"], entry=entry)
    return out


def chain_entries() -> list[dict]:
    """The chain kernels attached in this process (docs/chains.md), newest first: sig_hex (the
    chain's canonical bytes), ops, cache_key ("" when added by add_chain_kernel), state
    ("checking" until its first use matched eager, "served", "refused"), reason (why refused),
    stopped (which guard refused it: "slower", "dropped", else "other"; "" while not refused),
    and counters: heads (the kernel ran at the chain's head), completed (every member was handed
    its result), dropped (the chain broke off before its last member), skipped (heads run eager
    because this thread's last outcomes predicted the chain would not complete there); the speed
    guard's: timed
    (kernel samples), kernel_us (the fastest), eager_us (the members' fastest eager calls
    summed, -1 while one has none), members_us (the same with each member's own kernel where that
    is faster: what the guard compares), eager_heads (heads that ran the members for those
    samples)."""
    return _native.take_json(_native.lib().kf_chain_entries_json(_native.runtime()))


def add_chain_kernel(spec: dict, source: str, launch, *, backend: str = "host",
                     outputs: list | None = None, atol: float = 1e-5, rtol: float = 1e-5,
                     insert: bool = False) -> str | None:
    """Attach a hand-written kernel for a recorded chain (docs/chains.md), compiled here from
    checked source like a host entry rebuilt from source; with `insert`, also write it to the
    cache folder as a kforge::chain entry (what the forge produces) and return its cache key.

    `spec` is a chain's spec from chains(); the kernel's arguments are the head's tensor inputs,
    then the externals, then every member's outputs in member order, as typed pointers (launch
    record as for add_kernel). `outputs` are those outputs' layouts (the manifest's form, each
    with "member"); None takes the layouts eager produced in this process. Nothing is trusted:
    the chain's first use in this process runs every member eager too and serves the kernel
    only if all of them match within atol/rtol. Raises KernelForgeError naming the reason."""
    import ctypes
    import json

    _native.intercept()  # its members' ops, served in this process from then on
    lib = _native.lib()
    log = ctypes.c_void_p()
    key = ctypes.create_string_buffer(33) if insert else None
    launch_text = launch if isinstance(launch, str) else json.dumps(launch)
    code = lib.kf_chain_kernel_add(_native.runtime(), json.dumps(spec).encode(),
                                   json.dumps(outputs).encode() if outputs is not None else None,
                                   backend.encode(), source.encode(), launch_text.encode(),
                                   float(atol), float(rtol), key, ctypes.byref(log))
    if log.value:
        lib.kf_free(log)
    if code:
        raise KernelForgeError(f"add_chain_kernel: {_native.status_str(code)}: {_native.errmsg()}")
    return key.value.decode() if insert else None


def _time_basis(row) -> str:
    return "device" if row["time_source"] == "cuda-events" else "host"


def reset_stats() -> None:
    _native.lib().kf_reset_stats(_native.runtime())


def set_recording(on: bool = True) -> None:
    """Observe every ATen op by name (not only intercepted ones) so stats() shows all hot ops.

    Costs a little on every op while on; `kforge run` and KFORGE_TUNE=1 turn it on.
    """
    code = _native.lib().kf_set_observer(_native.runtime(), 1 if on else 0)
    if code:
        raise KernelForgeError(f"cannot change recording: {_native.status_str(code)} "
                               f"({_native.errmsg()})")


def _resolve_op(op: str):
    from ._jobs import resolve

    return resolve(op)


def _served_calls(key: str) -> int:
    return next((r["served"] for r in stats() if r["key"] == key), 0)


def signature_key(op: str, *args, **kwargs) -> str:
    """Run `op` eagerly on the arguments and return the key of the signature it was recorded as.

    `op` is named as in stats(), e.g. "aten::_softmax" or "aten::add.Tensor".
    """
    name = op if "::" in op else f"aten::{op}"
    fn = _resolve_op(name)
    _native.intercept()
    lib = _native.lib()
    rt = _native.runtime()
    lib.kf_probe_begin(rt, name.encode())
    try:
        fn(*args, **kwargs)
    finally:
        key = ctypes.c_uint64(0)
        code = lib.kf_probe_end(rt, ctypes.byref(key))
    if code:
        raise KernelForgeError(
            f"{name} was not intercepted for these arguments (is it in intercepted_ops(), "
            "and is the plugin enabled?)")
    return f"{key.value:016x}"


def cache_dir() -> str:
    """The kernel cache folder this process uses: KFORGE_CACHE_DIR at load, else
    $XDG_CACHE_HOME/kernel_forge (~/.cache/kernel_forge)."""
    return ops_info()["cache_dir"]


def cache_entries() -> list[dict]:
    """Entries of the cache folder (and of a KFORGE_CACHE bundle): key, op, signature, backend,
    arch, eager_us, kernel_us, speedup, max_abs_err, atol, rtol, proposer, disabled,
    disabled_reason, origin, served_here (whether this process serves it: an op's kernel
    attached to its signature, a chain's to its chain and not refused), elsewhere (built for
    another environment: another CPU or GPU arch, compiler or compile flags, torch or plugin
    version; never used here, `kforge warmup` tunes it again), family, family_record."""
    return _native.take_json(_native.lib().kf_cache_entries_json(_native.runtime()))


def reload_cache() -> None:
    """Serve entries that were added to the cache folder since this process looked (the plugin
    also looks by itself, every KFORGE_RELOAD_MS). Their ops are intercepted from now on if they
    were not (by default only ops with a kernel in the cache are, KFORGE_INTERCEPT)."""
    _native.lib().kf_reload_cache(_native.runtime())
    _native.intercept(all_ops=False)


def add_kernel(op: str, example_args, source: str, launch, backend: str | None = None, *,
               kwargs: dict | None = None, atol: float | None = None, rtol: float | None = None,
               random_inputs: int = 3, timeout: float = 600, allow_slower: bool = False) -> dict:
    """Compile a hand-written kernel for the exact signature of `op(*example_args)`, verify it
    against eager, and insert it into the cache; this process serves it from then on.

    `source` is C (backend "host", CPU tensors) or CUDA C++ (backend "nvrtc", CUDA tensors) with
    an entry function taking the op's tensor arguments then its outputs as typed pointers;
    `launch` is the launch record (dict or JSON text): entry, grid, block, smem, args.
    Verification runs in a child process, so a crashing kernel cannot take this one down. It
    checks the example and `random_inputs` random inputs of the same signature with poisoned
    outputs, at the dtype's tolerance unless atol/rtol are given, first in the forge worker's
    evaluator (inputs against guard pages / huge canaries: out-of-bounds reads are refused;
    compute-sanitizer memcheck for CUDA when present), then served through the plugin; then
    times the kernel against eager (interleaved, in that child) and refuses one more than 5%
    slower than eager unless `allow_slower` (the speed guard of a serving process may still stop
    it). Returns a dict with signature, cache_key, max_abs_err, max_rel_err, eager_us, kernel_us,
    speedup, check (the evaluator's record, with its memcheck outcome). Raises KernelForgeError
    naming the reason when compilation or verification fails; its `status` attribute is the node
    status ("oob", "wrong", "untouched", "input_written", "compile_error", ...) where one applies.
    """
    import json
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import tempfile

    import torch

    from . import _jobs

    name = op if "::" in op else f"aten::{op}"
    _resolve_op(name)
    _native.intercept()  # served in this process from then on
    args = tuple(example_args)
    devices = {t.device.type for t in _jobs.tensors_of(list(args))}  # a tensor list's too
    if not devices:
        raise KernelForgeError(f"add_kernel({name}): example_args hold no tensor")
    if backend is None:
        backend = "nvrtc" if "cuda" in devices else "host"
    launch_json = launch if isinstance(launch, str) else json.dumps(launch)
    job_dir = tempfile.mkdtemp(prefix="kforge-add-")
    try:
        torch.save({"op": name, "args": args, "kwargs": dict(kwargs or {}), "source": source,
                    "launch": launch_json, "backend": backend, "atol": atol, "rtol": rtol,
                    "random_inputs": random_inputs, "allow_slower": bool(allow_slower)},
                   os.path.join(job_dir, "job.pt"))
        env = dict(os.environ)
        env.pop("KFORGE_DISABLE", None)
        env["KFORGE_CACHE_DIR"] = cache_dir()
        try:
            p = subprocess.run([sys.executable, "-m", "kernel_forge._verify", job_dir], env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise KernelForgeError(f"add_kernel({name}): verification did not finish in "
                                   f"{timeout:g} s (a hanging kernel?)") from None
        result_path = os.path.join(job_dir, "result.json")
        if not os.path.exists(result_path):
            how = (f"was killed by signal {signal.Signals(-p.returncode).name}" if p.returncode < 0
                   else f"exited with status {p.returncode}")
            raise KernelForgeError(f"add_kernel({name}): the verification process {how} (a "
                                   f"crashing kernel?): {p.stderr.strip()[-2000:]}")
        with open(result_path) as f:
            result = json.load(f)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)
    if result["status"] != "ok":
        err = KernelForgeError(f"add_kernel({name}): {result['reason']}")
        err.status = result.get("node_status", result["status"])  # "oob", "wrong", ...
        raise err
    reload_cache()
    return result


def tune(op: str, example_args, iterations: int = 50, backend: str | None = None, *,
         kwargs: dict | None = None, seed: int = 1, margin: float = 0.03,
         stagnation: int | None = None,
         time_budget: float | None = None, candidate_timeout: float | None = None,
         random_inputs: int = 3, insert: bool = True, progress: bool = False,
         job_dir: str | None = None, proposer: str | None = None,
         llm_budget_usd: float | None = None, llm_max_requests: int | None = None,
         _worker_args=()) -> dict:
    """Search for a kernel for the exact signature of `op(*example_args, **kwargs)` and, when a
    verified one beats eager by `margin`, insert it into the cache (this process serves it).

    `op` is named as in stats() ("aten::_softmax"). The search runs in the forge worker process
    (kforge-worker): MCTS over the builtin templates, every candidate verified against eager on
    the example and `random_inputs` random inputs of the same signature (the example's tensors
    are left as they were, also for an in-place op). Returns a dict with
    status ("inserted", "found" (not inserted), "no_faster_kernel", "no_correct_kernel",
    "no_template"), eager_ms, best_ms, speedup, iterations, cache_key (None when nothing was
    inserted), job_dir (the tree and every candidate), and, when inserted, served_ms: this
    process's own time per call through the plugin, measured next to eager_call_ms.

    `stagnation`: stop after that many candidates in a row that neither beat the best by 1% nor
    started another template (0: never; None: max(10, iterations / 2)).

    `proposer`: "builtin" (templates), "llm" (a language model, configured by KFORGE_LLM_*; see
    README "LLM proposer") or "mixed"; default "mixed" when KFORGE_LLM_URL is set, else
    "builtin". `llm_budget_usd` / `llm_max_requests` stop the search when the model has cost
    that much; the result's "llm" holds requests, tokens and cost.
    """
    import torch

    import os

    from . import _jobs

    name = op if "::" in op else f"aten::{op}"
    fn = _resolve_op(name)
    args, kw = list(example_args), dict(kwargs or {})
    devices = {t.device.type for t in _jobs.tensors_of(args + list(kw.values()))}
    if not devices:
        raise KernelForgeError(f"tune({name}): example_args hold no tensor")
    want = "nvrtc" if "cuda" in devices else "host"
    if backend not in (None, want):
        raise KernelForgeError(f"tune({name}): backend {backend!r} cannot serve "
                               f"{'/'.join(sorted(devices))} tensors (use {want!r})")
    if iterations < 1:
        raise KernelForgeError(f"tune({name}): iterations must be >= 1, not {iterations}")
    if stagnation is not None and stagnation < 0:
        raise KernelForgeError(f"tune({name}): stagnation must be >= 0 (0: never), not {stagnation}")
    if proposer is None:
        proposer = "mixed" if os.environ.get("KFORGE_LLM_URL") else "builtin"
    if proposer not in ("builtin", "llm", "mixed"):
        raise KernelForgeError(f"tune({name}): proposer must be builtin, llm or mixed, "
                               f"not {proposer!r}")
    llm_args = []
    if llm_budget_usd is not None:
        llm_args += ["--llm-budget-usd", repr(float(llm_budget_usd))]
    if llm_max_requests is not None:
        llm_args += ["--llm-max-requests", str(int(llm_max_requests))]
    # the probe runs the op: on copies of what it writes, so the example is left as it was
    pargs, pkw = _jobs.clone_written(fn, args, kw)
    key = signature_key(name, *pargs, **pkw)
    search = {"iterations": int(iterations), "seed": int(seed), "margin": float(margin),
              "time_budget_s": float(time_budget or 0),
              "candidate_timeout_s": float(candidate_timeout or 0),
              "proposer": proposer, "cache_dir": cache_dir() if insert else ""}
    if stagnation is not None:
        search["stagnation"] = int(stagnation)
    job_dir = job_dir or _jobs.new_job_dir(name, key)
    try:
        _jobs.write_job(job_dir, key, [(args, kw)], recorded=[False], random_inputs=random_inputs,
                        search=search, seed=seed)
    except _jobs.NotTunable as e:
        raise KernelForgeError(f"tune({name}): {e}") from None
    bar = _jobs.ProgressBar(name) if progress else None
    try:
        result = _jobs.run_worker(job_dir, extra_args=llm_args + list(_worker_args),
                                  on_progress=bar)
    finally:
        if bar:
            bar.close()
    if insert:
        from . import _remote

        _remote.publish(result, cache_dir())  # KFORGE_REMOTE_CACHE: share the winner
    out = {
        "status": result["status"],
        "eager_ms": result["eager_us"] / 1e3,
        "best_ms": result["best_us"] / 1e3 if result.get("best_us") else None,
        "speedup": result.get("speedup"),
        "iterations": result["iterations"],
        "cache_key": result.get("cache_key"),
        "job_dir": job_dir,
        "detail": result.get("detail", ""),
        "stop_reason": result.get("stop_reason", ""),
        "node_counts": result.get("node_counts", {}),
        "wall_s": result.get("wall_s"),
        "proposer": result.get("proposer", proposer),
        "llm": result.get("llm"),
    }
    if out["cache_key"]:
        reload_cache()
        device = _jobs.tensors_of(args + list(kw.values()))[0].device
        work = [_jobs.clone_exact(a) for a in args]
        kwork = {k: _jobs.clone_exact(v) for k, v in kw.items()}
        fn(*work, **kwork)  # first use: checked against eager in this process
        out["served_ms"] = _jobs.bench_us(lambda: fn(*work, **kwork), device) / 1e3
        with _jobs.bypass():
            out["eager_call_ms"] = _jobs.bench_us(lambda: fn(*work, **kwork), device) / 1e3
        out["served"] = _served_calls(key) > 0
    return out


def tuner_status() -> dict:
    """The online tuner (KFORGE_TUNE=1) of this process: enabled, phase ("ramp", "deep",
    "waiting"; "off" without KFORGE_TUNE=1), queue (the hot signatures in the order they will be
    searched, each with its pass), current (the signature being searched, its pass, since_s),
    time_spent_s (prepare: writing job folders; worker: the worker's wall time; worker_busy:
    what its duty cycle counts, that less its sleeps, proposals and (CUDA) compiles;
    worker_cpu: its CPU time (host signatures), what the duty share is paid in on the host;
    duty_wait: waited before searches to keep to the share;
    confirm), searches, hot_at (key -> seconds after the tuner
    started when the signature first passed the thresholds), landed (per kernel moved into the
    cache: signature, key, cache_key, pass, eager_us, kernel_us, speedup, confirmed_ratio,
    spread, quiet, t_s, after_hot_s), refused (signature, key, pass, reason, t_s), settings,
    elapsed_s. `kforge ui` shows the same from JOBS_DIR/tuner-PID.json."""
    from . import _tuner

    return _tuner.status()


def _register_kernel(key: str, fn_address: int, user: int = 0) -> None:
    """Attach a C kernel (kf_kernel_fn address) to a signature key; 0 detaches. For tests and
    for the cache layer: the kernel is trusted as is, with no verification."""
    _native.intercept()
    code = _native.lib().kf_register_kernel(_native.runtime(), int(key, 16), fn_address or None,
                                            user or None)
    if code:
        raise KernelForgeError(f"register kernel for {key}: {_native.status_str(code)}: "
                               f"{_native.errmsg()}")


load()
if os.environ.get("KFORGE_REMOTE_CACHE") and not ops_info()["disabled_by_env"]:
    from . import _remote

    _remote.start_fetcher()  # the fleet cache: fetch published entries in the background
if ops_info().get("tune") and not ops_info()["disabled_by_env"]:
    from . import _tuner

    _tuner.start_online()  # KFORGE_TUNE=1: tune hot signatures in the background
