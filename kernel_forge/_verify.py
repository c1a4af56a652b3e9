"""The child process of kernel_forge.add_kernel: compile a candidate, verify it against eager,
time both, and insert it into the cache. Run as `python -m kernel_forge._verify JOB_DIR`.

It runs apart from the caller because a bad kernel can crash a process or poison a CUDA
context: here that costs this child, never the user's process. It writes JOB_DIR/result.json.

Verification (docs/architecture.md): first the worker's own check of one candidate (`kforge-worker
--check`, forge/eval/eval_check.h) on a job folder of the example and random inputs: every buffer
against a guard page or between huge canary values, so that reading out of bounds is refused
(status oob or wrong), and compute-sanitizer memcheck for a CUDA kernel when the tool is there.
Then, here, served through the plugin: on the example inputs and on random inputs of the same
signature (including large magnitudes, for softmax -inf and rows at alternating offsets), with
every fresh output pre-filled with 0xff bytes, the kernel's outputs match eager within the
dtype's tolerance with NaN in the same places, the inputs it must not write are bit-identical
afterwards (those it writes without returning them, batch norm's running statistics in
training, must hold eager's values), different inputs give different outputs, and the source
passes the plugin's static check (compile/source_check.c: no call back into ATen, cuBLAS or
cuDNN, no system calls, no code run at load time, ...; the host compiler checks its
preprocessor's output as well).
A kernel slower than eager (by more than SLOWER_MARGIN, timed interleaved with eager) is
refused unless the job says allow_slower.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import time
import traceback

import torch

from . import _native
from ._jobs import (NotTunable, arg_value, call_index_bound, clone_exact, hidden_writes,
                    kf_dtype_code, random_like, shift_invariant_dim, tensors_of, tolerance,
                    worker_path, write_job)

class Refused(Exception):
    def __init__(self, reason: str, status: str = "refused"):
        super().__init__(reason)
        self.status = status  # a node status where one applies: "oob", "wrong", ...


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's whole storage as a uint8 tensor on its device (no host copy)."""
    out = torch.empty(0, dtype=torch.uint8, device=t.device)
    return out.set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes(),), (1,))


def compare(k: torch.Tensor, e: torch.Tensor, atol: float, rtol: float, what: str):
    """(max_abs, max_rel) of k against e, or Refused with the reason: the eager-match rule of
    common/match.c (kf_match_dense), the one the worker and the first-use check use."""
    if k.shape != e.shape or k.dtype != e.dtype:
        raise Refused(f"{what}: shape/dtype {tuple(k.shape)}/{k.dtype} != eager {tuple(e.shape)}/{e.dtype}",
                      "wrong")
    if k.numel() == 0:
        return 0.0, 0.0
    lib = _native.lib()
    code = kf_dtype_code(k.dtype)
    kh, eh = k.detach().cpu().contiguous(), e.detach().cpu().contiguous()
    r = _native.MatchResult()
    bad = lib.kf_match_dense(code, ctypes.c_void_p(kh.data_ptr()), ctypes.c_void_p(eh.data_ptr()),
                             kh.numel(), atol, rtol, ctypes.byref(r))
    if bad < 0:
        raise Refused(f"{what}: no comparison rule for dtype {k.dtype}", "wrong")
    if bad == 0:
        return r.max_abs, r.max_rel
    if not k.dtype.is_floating_point:
        raise Refused(f"{what}: differs from eager (exact comparison)", "wrong")
    if r.nonfinite_bad:
        raise Refused(f"{what}: NaN or Inf positions differ from eager ({int(kh.isnan().sum())} NaN "
                      f"vs {int(eh.isnan().sum())}); an output the kernel never wrote stays NaN",
                      "wrong")
    raise Refused(f"{what}: {bad} of {e.numel()} elements outside atol={atol:g} rtol={rtol:g} "
                  f"(max abs error {r.max_abs:.3g})", "wrong")


# A kernel slower than eager by more than this is refused unless allow_slower (the margin of the
# plugin's speed guard, which would stop serving it anyway).
SLOWER_MARGIN = 0.05


def _once_us(fn, device) -> float:
    if device.type == "cuda":
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e3
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e3


def time_pair_us(fn, device, set_bypass, reps=21):
    """Median us of `fn` served (through the plugin) and eager (this thread bypassing it), timed
    the same way and interleaved, so that a change of load on the machine hits both alike."""
    served, eager = [], []
    for i in range(3 + reps):
        fn()  # served
        t = _once_us(fn, device)
        if i >= 3:
            served.append(t)
        set_bypass(1)
        try:
            fn()
            t = _once_us(fn, device)
        finally:
            set_bypass(0)
        if i >= 3:
            eager.append(t)
    return statistics.median(served), statistics.median(eager)


def write_check_job(d: str, key: str, args, kwargs, backend: str, random_inputs: int, seed: int,
                    atol: float, rtol: float) -> str | None:
    """A job folder for the worker's check (module docstring) in `d`; None when it can take
    this one, else why not (a signature a job folder cannot describe)."""
    try:
        desc = write_job(d, key, [(list(args), dict(kwargs))], recorded=[False],
                         random_inputs=random_inputs, seed=seed, search={"bench_reps": 5},
                         bench_reps=5)
    except NotTunable as e:
        return str(e)
    if desc["backend"] != backend:
        return f"a {backend} kernel for a {desc['backend']} job"
    desc["atol"], desc["rtol"] = atol, rtol
    with open(os.path.join(d, "job.json"), "w") as f:
        json.dump(desc, f, indent=1)
    return None


def run_check(d: str, source: str, launch: str) -> dict:
    """`kforge-worker --check` of one candidate on the job folder `d`: its check.json, or
    Refused (with the node status) unless the kernel verified."""
    with open(os.path.join(d, "kernel.src"), "w") as f:
        f.write(source)
    with open(os.path.join(d, "launch.json"), "w") as f:
        f.write(launch)
    cmd = [worker_path(), "--check", d, os.path.join(d, "kernel.src"), os.path.join(d, "launch.json")]
    path = os.path.join(d, "check.json")
    if os.path.exists(path):
        os.unlink(path)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0 or not os.path.exists(path):
        raise Refused(f"the worker's check failed (exit {p.returncode}): {p.stderr.strip()[-1000:]}",
                      "error")
    with open(path) as f:
        res = json.load(f)
    if res["status"] != "verified":
        raise Refused(f"{res['status']}: {name_outputs(d, res['error'])}", res["status"])
    return res


def name_outputs(d: str, msg: str) -> str:
    """The worker numbers a job's outputs; an output that is an argument written in place
    (in-place ops, out=, batch norm's running statistics) is named as the argument."""
    m = re.search(r"\boutput (\d+)", msg)
    try:
        with open(os.path.join(d, "job.json")) as f:
            job = json.load(f)
        out = job["outputs"][int(m.group(1))] if m else None
        if out is None or out.get("alias", -1) < 0:
            return msg
        name = job["inputs"][out["alias"]]["name"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return msg
    return msg.replace(m.group(0), f"{m.group(0)} (argument '{name}', which it writes)", 1)


def run(job: dict) -> dict:
    import kernel_forge as kf
    from kernel_forge import _native

    op, args, kwargs = job["op"], tuple(job["args"]), dict(job["kwargs"])
    source, launch, backend = job["source"], job["launch"], job["backend"]
    why = _native.source_check(backend, source)
    if why:
        raise Refused(why)
    fn = kf._resolve_op(op)
    key = kf.signature_key(op, *[clone_exact(a) for a in args], **kwargs)
    lib, rt = _native.lib(), _native.runtime()
    info = _native.take_json(lib.kf_signature_info_json(rt, int(key, 16)))
    if not info["servable"]:
        raise Refused(f"{info['signature']} cannot be served by a kernel: "
                      f"{info.get('unservable_reason', '')}")
    if info["outputs"] is None:
        raise Refused(f"{info['signature']} cannot be served by a kernel (outputs a kernel "
                      "cannot produce exactly)")
    device = next((t.device for t in tensors_of(list(args))), torch.device("cpu"))
    out_dtype = next(t.dtype for t in tensors_of(fn(*[clone_exact(a) for a in args], **kwargs)))
    atol, rtol = tolerance(op, out_dtype)
    if job.get("atol") is not None:
        atol = float(job["atol"])
    if job.get("rtol") is not None:
        rtol = float(job["rtol"])

    # before this process runs the kernel at all: guard pages, canaries, memcheck
    d = os.path.join(job["dir"], "check")
    why = write_check_job(d, key, args, kwargs, backend, int(job["random_inputs"]),
                          job.get("seed", 0), atol, rtol)
    check = {"skipped": why} if why else run_check(d, source, launch)

    gen = torch.Generator().manual_seed(job.get("seed", 0))
    row_dim = shift_invariant_dim(op, args[1] if len(args) > 1 else kwargs.get("dim"))

    def randomized(a, v, name="", bound=None):  # tensors and a list's elements; else as it is
        if isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a):
            return type(a)(randomized(x, v) for x in a)
        return (random_like(a, v, op, name, gen, row_dim if name == "self" else None, bound)
                if isinstance(a, torch.Tensor) else a)

    # the first positional argument is the schema's `self` (a triangular solve's matrix); a
    # gather's indices are drawn in range (call_index_bound)
    inputs = [args] + [tuple(randomized(a, v, "self" if i == 0 else "",
                                        call_index_bound(op, fn, list(args), kwargs, i))
                             for i, a in enumerate(args))
                       for v in range(int(job["random_inputs"]))]
    # what the call writes without returning it (batch norm's running statistics in training):
    # outputs too, compared with eager's writes, never required unchanged
    hidden = hidden_writes(fn, list(args), kwargs)

    def results(work, out):
        return tensors_of(out) + [arg_value(fn, work, kwargs, i) for i in hidden]

    # eager references, computed with the plugin switched off
    kf.disable()
    try:
        refs = []
        for inp in inputs:
            work = [clone_exact(a) for a in inp]
            refs.append(results(work, fn(*work, **kwargs)))
    finally:
        kf.enable()

    log = ctypes.c_void_p()
    code = lib.kf_candidate_register(rt, int(key, 16), backend.encode(), source.encode(),
                                     launch.encode(), ctypes.byref(log))
    compile_log = ctypes.string_at(log.value).decode("utf-8", "replace") if log.value else ""
    if log.value:
        lib.kf_free(log)
    if code:
        raise Refused(f"{_native.status_str(code)}: {_native.errmsg()}")

    lib.kf_set_poison(rt, 1)
    max_abs = max_rel = 0.0
    outs_seen = []
    try:
        for i, (inp, ref) in enumerate(zip(inputs, refs)):
            what = "example input" if i == 0 else f"random input {i}"
            work = [clone_exact(a) for a in inp]
            before = [clone_exact(a) for a in work]
            served = kf._served_calls(key)
            out = results(work, fn(*work, **kwargs))
            if kf._served_calls(key) != served + 1:
                raise Refused(f"{what}: the kernel was not used (it refused the call, or could "
                              "not be loaded): see the log")
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if len(out) != len(ref):
                raise Refused(f"{what}: {len(out)} outputs, eager has {len(ref)}")
            written = {t.untyped_storage().data_ptr() for t in out}
            n_ret = len(ref) - len(hidden)
            for j, (k, e) in enumerate(zip(out, ref)):
                label = f"output {j}" if j < n_ret else \
                    f"argument '{fn._schema.arguments[hidden[j - n_ret]].name}' (which it writes)"
                a, r = compare(k, e, atol, rtol, f"{what}, {label}")
                max_abs, max_rel = max(max_abs, a), max(max_rel, r)
            for j, (a, b) in enumerate(zip(tensors_of(work), tensors_of(before))):
                if a.untyped_storage().data_ptr() not in written and \
                        not torch.equal(storage_bytes(a), storage_bytes(b)):
                    raise Refused(f"{what}: input {j} was modified by the kernel", "input_written")
            outs_seen.append([t.clone() for t in out])
        # a kernel that replays recorded outputs gives the same result for different inputs
        if len(outs_seen) > 1 and all(torch.equal(a, b) for a, b in zip(outs_seen[0], outs_seen[1])) \
                and not all(torch.equal(a, b) for a, b in zip(refs[0], refs[1])):
            raise Refused("different inputs gave identical outputs (hard-coded results?)", "wrong")
    finally:
        lib.kf_set_poison(rt, 0)

    work = [clone_exact(a) for a in args]
    kernel_us, eager_us = time_pair_us(lambda: fn(*work, **kwargs), device,
                                       lib.kf_set_thread_bypass)
    if kernel_us > eager_us * (1 + SLOWER_MARGIN) and not job.get("allow_slower"):
        raise Refused(f"the kernel is slower than eager here ({kernel_us:.1f} us vs "
                      f"{eager_us:.1f} us per call, more than {SLOWER_MARGIN:.0%} slower); "
                      "pass allow_slower=True to insert it anyway")

    meta = {"source": source, "launch": launch, "max_abs_err": max_abs, "max_rel_err": max_rel,
            "atol": atol, "rtol": rtol, "eager_us": eager_us, "kernel_us": kernel_us,
            "proposer": job.get("proposer", "hand-written"), "job": job.get("job", "")}
    if job.get("insert", True):
        out_key = ctypes.create_string_buffer(33)
        code = lib.kf_candidate_insert(rt, int(key, 16), json.dumps(meta).encode(), out_key)
        if code:
            raise Refused(f"verified, but not inserted: {_native.errmsg()}")
        cache_key = out_key.value.decode()
    else:
        cache_key = None
    return {"status": "ok", "signature": info["signature"], "signature_key": key,
            "cache_key": cache_key, "max_abs_err": max_abs, "max_rel_err": max_rel, "atol": atol,
            "rtol": rtol, "eager_us": eager_us, "kernel_us": kernel_us,
            "speedup": eager_us / kernel_us if kernel_us > 0 else 0.0, "compile_log": compile_log,
            "inputs_checked": len(inputs), "check": check}


def main(argv):
    job_dir = argv[1]
    job = torch.load(os.path.join(job_dir, "job.pt"), weights_only=False)  # written by our parent
    job["dir"] = job_dir
    try:
        result = run(job)
    except Refused as e:
        result = {"status": "refused", "reason": str(e), "node_status": e.status}
    except Exception as e:  # any other failure is reported, not hidden
        result = {"status": "error", "reason": f"{type(e).__name__}: {e}",
                  "traceback": traceback.format_exc()}
    with open(os.path.join(job_dir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
