"""The child process of kernel_forge.add_kernel: compile a candidate, verify it against eager,
time both, and insert it into the cache. Run as `python -m kernel_forge._verify JOB_DIR`.

It runs apart from the caller because a bad kernel can crash a process or poison a CUDA
context: here that costs this child, never the user's process. It writes JOB_DIR/result.json.

Verification (DESIGN.md): on the example inputs and on random inputs of the same signature
(including large magnitudes and, for softmax, -inf), with every fresh output pre-filled with
0xff bytes, the kernel's outputs match eager within the dtype's tolerance with NaN in the same
places, the inputs it must not write are bit-identical afterwards, different inputs give
different outputs, and the source passes the plugin's static check (forge/source_check.c: no
call back into ATen, cuBLAS or cuDNN, no system calls, no code run at load time, ...; the host
compiler checks its preprocessor's output as well).
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys
import time
import traceback

import torch

from ._jobs import clone_exact, random_like, tensors_of, tolerance

class Refused(Exception):
    pass


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's whole storage as a uint8 tensor on its device (no host copy)."""
    out = torch.empty(0, dtype=torch.uint8, device=t.device)
    return out.set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes(),), (1,))


def compare(k: torch.Tensor, e: torch.Tensor, atol: float, rtol: float, what: str):
    """(max_abs, max_rel) of k against e, or Refused with the reason."""
    if k.shape != e.shape or k.dtype != e.dtype:
        raise Refused(f"{what}: shape/dtype {tuple(k.shape)}/{k.dtype} != eager {tuple(e.shape)}/{e.dtype}")
    if k.numel() == 0:
        return 0.0, 0.0
    if not k.dtype.is_floating_point:
        if not torch.equal(k, e):
            raise Refused(f"{what}: differs from eager (exact comparison)")
        return 0.0, 0.0
    # half types are exact in float32; float32/64 are compared in float64
    wide = torch.float64 if k.dtype in (torch.float32, torch.float64) else torch.float32
    kd, ed = k.to(wide), e.to(wide)
    if not torch.equal(kd.isnan(), ed.isnan()):
        raise Refused(f"{what}: NaN positions differ from eager ({int(kd.isnan().sum())} NaN vs "
                      f"{int(ed.isnan().sum())}); an output the kernel never wrote stays NaN")
    if not torch.equal(kd.isinf() & (kd > 0), ed.isinf() & (ed > 0)) or \
            not torch.equal(kd.isinf() & (kd < 0), ed.isinf() & (ed < 0)):
        raise Refused(f"{what}: Inf positions differ from eager")
    finite = ed.isfinite()
    diff = (kd - ed).abs()[finite]
    ref = ed.abs()[finite]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    max_rel = float((diff / ref.clamp_min(1e-30)).max()) if diff.numel() else 0.0
    bad = diff > atol + rtol * ref
    if bool(bad.any()):
        raise Refused(f"{what}: {int(bad.sum())} of {e.numel()} elements outside atol={atol:g} "
                      f"rtol={rtol:g} (max abs error {max_abs:.3g})")
    return max_abs, max_rel


def time_us(fn, device, reps=20):
    for _ in range(3):
        fn()
    if device.type == "cuda":
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        return statistics.median(times)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


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
    if not info["servable"] or info["outputs"] is None:
        raise Refused(f"{info['signature']} cannot be served by a kernel (arguments or outputs "
                      "a kernel cannot take exactly)")
    device = next((t.device for t in tensors_of(list(args))), torch.device("cpu"))
    out_dtype = next(t.dtype for t in tensors_of(fn(*[clone_exact(a) for a in args], **kwargs)))
    atol, rtol = tolerance(op, out_dtype)
    if job.get("atol") is not None:
        atol = float(job["atol"])
    if job.get("rtol") is not None:
        rtol = float(job["rtol"])

    gen = torch.Generator().manual_seed(job.get("seed", 0))

    def randomized(a, v, name=""):  # tensors and a list's elements; anything else as it is
        if isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a):
            return type(a)(randomized(x, v) for x in a)
        return random_like(a, v, op, name, gen) if isinstance(a, torch.Tensor) else a

    # the first positional argument is the schema's `self` (a triangular solve's matrix)
    inputs = [args] + [tuple(randomized(a, v, "self" if i == 0 else "") for i, a in enumerate(args))
                       for v in range(int(job["random_inputs"]))]
    # eager references, computed with the plugin switched off
    kf.disable()
    try:
        refs = [tensors_of(fn(*[clone_exact(a) for a in inp], **kwargs)) for inp in inputs]
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
            out = tensors_of(fn(*work, **kwargs))
            if kf._served_calls(key) != served + 1:
                raise Refused(f"{what}: the kernel was not used (it refused the call, or could "
                              "not be loaded): see the log")
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if len(out) != len(ref):
                raise Refused(f"{what}: {len(out)} outputs, eager has {len(ref)}")
            written = {t.untyped_storage().data_ptr() for t in out}
            for j, (k, e) in enumerate(zip(out, ref)):
                a, r = compare(k, e, atol, rtol, f"{what}, output {j}")
                max_abs, max_rel = max(max_abs, a), max(max_rel, r)
            for j, (a, b) in enumerate(zip(tensors_of(work), tensors_of(before))):
                if a.untyped_storage().data_ptr() not in written and \
                        not torch.equal(storage_bytes(a), storage_bytes(b)):
                    raise Refused(f"{what}: input {j} was modified by the kernel")
            outs_seen.append([t.clone() for t in out])
        # a kernel that replays recorded outputs gives the same result for different inputs
        if len(outs_seen) > 1 and all(torch.equal(a, b) for a, b in zip(outs_seen[0], outs_seen[1])) \
                and not all(torch.equal(a, b) for a, b in zip(refs[0], refs[1])):
            raise Refused("different inputs gave identical outputs (hard-coded results?)")
    finally:
        lib.kf_set_poison(rt, 0)

    work = [clone_exact(a) for a in args]
    kernel_us = time_us(lambda: fn(*work, **kwargs), device)
    kf.disable()
    try:
        eager_us = time_us(lambda: fn(*work, **kwargs), device)
    finally:
        kf.enable()

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
            "inputs_checked": len(inputs)}


def main(argv):
    job_dir = argv[1]
    job = torch.load(os.path.join(job_dir, "job.pt"), weights_only=False)  # written by our parent
    try:
        result = run(job)
    except Refused as e:
        result = {"status": "refused", "reason": str(e)}
    except Exception as e:  # any other failure is reported, not hidden
        result = {"status": "error", "reason": f"{type(e).__name__}: {e}",
                  "traceback": traceback.format_exc()}
    with open(os.path.join(job_dir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
