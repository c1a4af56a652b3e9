"""Tuning jobs: the job folder the forge worker reads (forge/job.h), and running the worker.

A job is one signature: its arguments as the plugin decoded them, real calls (the example of
`tune`, or calls the plugin copied from the model), random inputs of the same signature with
eager's outputs (including large magnitudes and -inf masks), eager's time measured the way the
worker measures candidates, and the roofline for the bytes the op moves. The worker is a separate
C program: candidates never run in this process.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from . import _native
from ._native import KernelForgeError

# kf_dtype codes (include/kforge.h) <-> names (plugin/signature.c) <-> torch dtypes
_DTYPE_NAMES = ["?", "f32", "f16", "bf16", "f64", "i8", "u8", "i16", "i32", "i64", "bool",
                "c64", "c128", "f8e4m3", "f8e5m2"]
_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                 "f64": torch.float64, "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16,
                 "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}
_REDUCTIONS = ("_softmax", "_log_softmax", "native_layer_norm", "native_group_norm",
               "_fused_rms_norm", "native_batch_norm", "cudnn_batch_norm",
               "_native_batch_norm_legit_no_training", "mean", "linalg_solve_triangular",
               "_conv_depthwise2d")
_KINDS_OK = {"tensor", "tensor_list", "i", "d", "b", "s", "n", "l"}
FLUSH_BYTES = 256 << 20  # larger than any GPU's L2, as the worker's evaluator uses
MAX_KERNEL_TENSORS = 16  # a kernel's pointer arguments: inputs + fresh outputs (KF_LAUNCH_MAX_ARGS)


class NotTunable(KernelForgeError):
    """The signature cannot become a job (an argument a kernel cannot take)."""


@contextlib.contextmanager
def bypass():
    """This thread's ATen calls go to the original kernels, unrecorded (other threads unaffected)."""
    lib = _native.lib()
    lib.kf_set_thread_bypass(1)
    try:
        yield
    finally:
        lib.kf_set_thread_bypass(0)


def tolerance(op: str, dtype: torch.dtype) -> tuple[float, float]:
    """DESIGN.md: fp32 1e-5 elementwise / 1e-4 reductions, fp16 1e-3, bf16 1e-2, ints exact."""
    if dtype == torch.float16:
        return 1e-3, 1e-3
    if dtype == torch.bfloat16:
        return 1e-2, 1e-2
    if dtype.is_floating_point:
        tol = 1e-4 if op.split("::")[-1].split(".")[0] in _REDUCTIONS else 1e-5
        return tol, tol
    return 0.0, 0.0


def describe(key: str) -> tuple[dict, dict]:
    """(signature info, decoded arguments) of a seen signature."""
    lib, rt = _native.lib(), _native.runtime()
    info = _native.take_json(lib.kf_signature_info_json(rt, int(key, 16)))
    ptr = lib.kf_signature_args_json(rt, int(key, 16))
    if not ptr:
        raise NotTunable(f"signature {key}: {_native.errmsg()}")
    return info, _native.take_json(ptr)


def tensor_args(args: dict) -> list[tuple[str, dict]]:
    """(name, description) of every tensor a kernel takes, in schema order: the tensor arguments,
    and a tensor list's elements in its place, named "tensors.0", "tensors.1", ..."""
    out = []
    for a in args["args"]:
        if a["kind"] == "tensor":
            out.append((a["name"], a))
        elif a["kind"] == "tensor_list":
            out += [(f"{a['name']}.{i}", t) for i, t in enumerate(a["tensors"])]
    return out


# Ops that overwrite their first argument without reading it: its old contents are not input.
_OVERWRITE_SELF = {"copy_", "fill_", "zero_"}


def _itemsize(dtype: str) -> int:
    t = _TORCH_DTYPES.get(dtype)
    return t.itemsize if t is not None else 0


def bytes_moved(info: dict, args: dict) -> int:
    """Bytes a call of this signature must read and write, at least (the roofline's bytes): each
    tensor it reads (a tensor list's elements too), the smaller of its span and its elements (an
    expanded tensor repeats addresses, a slice skips part of its span: a roofline asking for more
    than the op moves would call a copy-speed kernel too fast to trust), and each output (one
    written in place counts again), except the destination of copy_/fill_/zero_: written only."""
    skip = None
    if info["op"].split("::")[-1].split(".")[0] in _OVERWRITE_SELF:
        skip = next((o["alias_arg"] for o in info["outputs"] or [] if o["alias_arg"] >= 0), None)
    total = 0
    for i, a in enumerate(args["args"]):
        if i == skip:
            continue
        ts = [a] if a["kind"] == "tensor" else a.get("tensors", []) if a["kind"] == "tensor_list" \
            else []
        for t in ts:
            if all(n > 0 for n in t["sizes"]):
                span = 1 + sum((n - 1) * st for n, st in zip(t["sizes"], t["strides"]))
                total += min(span, _prod(t["sizes"])) * _itemsize(t["dtype"])
    for o in info["outputs"] or []:
        if o["alias_arg"] >= 0:
            a = args["args"][o["alias_arg"]]
            n, es = _prod(a["sizes"]), _itemsize(a["dtype"])
        else:
            n, es = _prod(o["sizes"]), _itemsize(_DTYPE_NAMES[o["dtype"]])
        total += n * es
    return total


def check_tunable(info: dict, args: dict) -> None:
    sig = info["signature"]
    for a in args["args"]:
        if a["kind"] not in _KINDS_OK:
            what = ("an opaque value (a type, or a tensor list element, that a signature cannot "
                    "describe exactly)" if a["kind"] == "opaque"
                    else "a Python number (a wrapped 0-dim tensor)" if a["kind"] == "wrapped"
                    else f"a {a['kind'].replace('_', ' ')}")
            raise NotTunable(f"{sig}: argument '{a['name']}' is {what}, which a kernel cannot take")
        if a["kind"] == "d" and "text" in a:
            raise NotTunable(f"{sig}: argument '{a['name']}' is {a['text']}")
    tensors = tensor_args(args)
    for name, t in tensors:
        if t["dtype"] not in _TORCH_DTYPES:
            raise NotTunable(f"{sig}: argument '{name}' has dtype {t['dtype']}")
        if t["device"] != info["device"] or t["device_index"] != info["device_index"]:
            raise NotTunable(f"{sig}: argument '{name}' is on {t['device']}:{t['device_index']}, "
                             f"the call on {info['device']}:{info['device_index']}")
    if args.get("truncated"):
        raise NotTunable(f"{sig}: more arguments than a signature describes exactly (truncated)")
    fresh = sum(1 for o in info["outputs"] or [] if o["alias_arg"] < 0)
    if len(tensors) + fresh > MAX_KERNEL_TENSORS:
        raise NotTunable(f"{sig}: {len(tensors)} input tensors and {fresh} output"
                         f"{'' if fresh == 1 else 's'}; a kernel takes at most "
                         f"{MAX_KERNEL_TENSORS} tensors")
    if not info["servable"]:
        raise NotTunable(f"{sig}: not servable: {info.get('unservable_reason', '')}")
    if info["outputs"] is None:
        raise NotTunable(f"{sig}: outputs a kernel cannot produce exactly")
    for o in info["outputs"]:
        if o["alias_arg"] < 0 and _DTYPE_NAMES[o["dtype"]] not in _TORCH_DTYPES:
            raise NotTunable(f"{sig}: an output has dtype {_DTYPE_NAMES[o['dtype']]}")


def resolve(op: str):
    name = op if "::" in op else f"aten::{op}"
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
    except (AttributeError, RuntimeError) as e:
        raise KernelForgeError(f"unknown operator {name}") from e


def call_from_args(fn, args: dict, tensors: list) -> tuple[list, dict]:
    """Positional and keyword arguments for `fn` from decoded arguments and the flat tensors of a
    call (tensor_args order: a tensor list takes as many as the signature's list holds)."""
    it = iter(tensors)
    pos, kw = [], {}
    schema_args = fn._schema.arguments
    for spec, a in zip(schema_args, args["args"]):
        k = a["kind"]
        if k == "tensor":
            v = next(it)
        elif k == "tensor_list":
            v = [next(it) for _ in a["tensors"]]
        elif k == "d":
            v = float(a["value"])
        elif k == "i":
            v = int(a["value"])
        elif k == "b":
            v = bool(a["value"])
        elif k == "l":
            v = [int(x) for x in a["value"]]
        elif k == "s":
            v = a["value"]
        else:
            v = None
        if spec.kwarg_only:
            kw[spec.name] = v
        else:
            pos.append(v)
    return pos, kw


def span_numel(t: torch.Tensor) -> int:
    if t.numel() == 0:
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))


def write_span(f, t: torch.Tensor) -> int:
    """Write the tensor's strided span, element 0 to its last addressed element (forge/job.h);
    returns its bytes. Written from the host tensor's own memory: a CUDA tensor's span is copied
    to the host once, nothing is copied again into a bytes object."""
    n = span_numel(t)
    if n == 0:
        return 0
    flat = t.detach().as_strided((n,), (1,)).cpu()
    nbytes = n * t.element_size()
    f.write(memoryview((ctypes.c_char * nbytes).from_address(flat.data_ptr())))
    return nbytes


def _on_storage(t: torch.Tensor, storage) -> torch.Tensor:
    """A tensor with t's sizes, strides and storage offset over `storage`."""
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    return out.set_(storage, t.storage_offset(), t.size(), t.stride())


def clone_exact(t):
    """A copy with the same sizes, strides, storage offset (so the same alignment) and bytes; a
    list or tuple of tensors element by element; anything else as it is."""
    if isinstance(t, (list, tuple)):
        return type(t)(clone_exact(x) for x in t)
    if not isinstance(t, torch.Tensor):
        return t
    return _on_storage(t, t.untyped_storage().clone())


def op_name(fn) -> str:
    """"aten::add.Tensor" of a torch.ops overload."""
    s = fn._schema
    return f"{s.name}.{s.overload_name}" if s.overload_name else s.name


def arg_value(fn, pos: list, kw: dict, i: int):
    """Argument i (schema order) of a call, its default when the call leaves it out."""
    spec = fn._schema.arguments[i]
    if i < len(pos):
        return pos[i]
    return kw[spec.name] if spec.name in kw else spec.default_value


def hidden_writes(fn, pos: list, kw: dict) -> list[int]:
    """Schema indices of the tensors this call writes although the op's schema does not mark
    them (the plugin's table, kf_op_hidden_writes: batch norm's running statistics when
    training=True). They are outputs the op does not return."""
    mask, when = ctypes.c_uint32(0), ctypes.c_int(-1)
    if not _native.lib().kf_op_hidden_writes(op_name(fn).encode(), ctypes.byref(mask),
                                             ctypes.byref(when)):
        return []
    n = len(fn._schema.arguments)
    if 0 <= when.value < n and arg_value(fn, pos, kw, when.value) is False:
        return []
    return [i for i in range(n) if mask.value >> i & 1 and
            isinstance(arg_value(fn, pos, kw, i), torch.Tensor)]


def clone_written(fn, pos: list, kw: dict) -> tuple[list, dict]:
    """The call's arguments with a copy (clone_exact) of each one it writes (the schema's
    Tensor(a!) ones and hidden_writes), the others as they are: calling `fn` leaves the caller's
    tensors as they were, without copying inputs that it only reads."""
    spec = fn._schema.arguments
    written = {a.name for a in spec if a.alias_info is not None and a.alias_info.is_write}
    written |= {spec[i].name for i in hidden_writes(fn, pos, kw)}
    pos = [clone_exact(v) if a.name in written else v for a, v in zip(spec, pos)]
    return pos, {k: clone_exact(v) if k in written else v for k, v in kw.items()}


def random_like(t: torch.Tensor, variant: int, op: str, name: str, gen: torch.Generator):
    """Random values laid out exactly like `t`, drawn by `gen` on its own device (a CUDA
    generator for a CUDA tensor: no host randn and copy of the whole storage): scale 1, 100 and
    0.01 in turn; -inf masks for softmax; variances kept positive (a negative running_var only
    tests NaN propagation); a triangular solve's matrix well conditioned (see below)."""
    nbytes = t.untyped_storage().nbytes()
    # every element of the storage is overwritten below: no need to copy t's bytes first
    storage = torch.empty(nbytes, dtype=torch.uint8, device=t.device).untyped_storage()
    out = _on_storage(t, storage)
    flat = torch.empty(0, dtype=t.dtype, device=t.device)
    flat.set_(storage, 0, (nbytes // t.element_size(),), (1,))
    dev = gen.device
    if t.dtype.is_floating_point:
        scale = [1.0, 100.0, 0.01][variant % 3]
        # in place: on a GPU, one float32 temporary of the storage's size at most
        vals = torch.randn(flat.shape, generator=gen, dtype=torch.float32, device=dev).mul_(scale)
        if "var" in name:
            vals.abs_().add_(0.1 * scale)
        if variant % 3 == 2 and "softmax" in op and flat.numel() > 4:
            vals[:: max(3, flat.numel() // 7)] = float("-inf")
        flat.copy_(vals)
        if "solve_triangular" in op and name == "self" and t.dim() >= 2:
            _condition_triangular(out, scale)
    elif t.dtype == torch.bool:
        flat.copy_(torch.rand(flat.shape, generator=gen, device=dev) > 0.5)
    else:
        flat.copy_(torch.randint(-5, 6, flat.shape, generator=gen, device=dev).to(t.dtype))
    return out


def _condition_triangular(a: torch.Tensor, scale: float):
    """A random triangular matrix of order n with N(0, 1) entries has a solution that grows like
    2^n: eager and any kernel disagree in the last bits, amplified past every tolerance. Off-
    diagonal entries within about 1/n and a diagonal of magnitude 1 to 2 keep the systems as
    well conditioned as a model's (Qwen 3.5's unit lower triangular ones)."""
    n = a.shape[-1]
    if a.shape[-2] != n or torch._debug_has_internal_overlap(a) != 0:
        return  # eager refuses it, or a broadcast view: left as drawn
    a.div_(scale * n)
    d = a.diagonal(dim1=-2, dim2=-1)
    d.copy_(torch.where(d < 0, d * n - 1, d * n + 1).clamp_(-2, 2))


def tensors_of(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors_of(o)]
    return []


def bench_us(fn, device: torch.device, reps: int = 20, flush_l2: bool = True) -> float:
    """Median time of fn in us, as the worker times candidates: 3 warm-ups, then each run timed
    alone (CUDA events around the call, L2 flushed before each run; wall clock on the host)."""
    for _ in range(3):
        fn()
    times = []
    if device.type == "cuda":
        scratch = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device) if flush_l2 else None
        for _ in range(reps):
            if scratch is not None:
                scratch.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
    else:
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


_bandwidth = {}


def copy_bandwidth_gbs(device: torch.device, nbytes: int) -> float:
    """Read+write GB/s of a copy. On CUDA one big copy (the DRAM ceiling, the L2 being flushed
    before every timed run); on the host a copy of the op's own size, so that an op whose data
    sits in the caches is compared with a copy that does too."""
    key = (str(device), 0 if device.type == "cuda" else max(nbytes // 2, 4096))
    if key not in _bandwidth:
        n = 1 << 30 if device.type == "cuda" else key[1]
        src = torch.ones(n, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        us = bench_us(lambda: dst.copy_(src), device, reps=10, flush_l2=False)
        if device.type != "cuda":  # the copy's own call overhead is not bandwidth
            s1, d1 = torch.ones(1, dtype=torch.uint8), torch.empty(1, dtype=torch.uint8)
            us = max(us - bench_us(lambda: d1.copy_(s1), device, reps=10), us * 0.1)
        _bandwidth[key] = 2 * n / (us * 1e3)
    return _bandwidth[key]


def _tensor_desc(a: dict) -> dict:
    return {"dtype": a["dtype"], "sizes": a["sizes"], "strides": a["strides"], "align": a["align"]}


def write_job(job_dir: str, key: str, calls: list[tuple[list, dict]], *, recorded: list[bool],
              random_inputs: int = 3, search: dict | None = None, seed: int = 0,
              bench_reps: int = 20) -> dict:
    """Write the job folder for signature `key` from real calls of it (argument lists whose
    tensors are exactly laid out as the signature says). Returns the job description."""
    info, args = describe(key)
    check_tunable(info, args)
    op = info["op"]
    fn = resolve(op)
    device = torch.device(info["device"], info["device_index"]) if info["device"] == "cuda" \
        else torch.device("cpu")
    arg_tensor_index = {}  # schema argument index -> index among the kernel's input tensors
    inputs = []  # one per tensor, a tensor list's elements in its place (tensor_args)
    for i, a in enumerate(args["args"]):
        if a["kind"] == "tensor":
            arg_tensor_index[i] = len(inputs)
            inputs.append(dict(_tensor_desc(a), name=a["name"]))
        elif a["kind"] == "tensor_list":
            inputs += [dict(_tensor_desc(t), name=f"{a['name']}.{j}")
                       for j, t in enumerate(a["tensors"])]
    outputs = []
    for o in info["outputs"]:
        alias = o["alias_arg"]
        if alias >= 0:  # written in place: the output is that argument, as it is laid out
            a = args["args"][alias]
            outputs.append({"dtype": a["dtype"], "sizes": a["sizes"], "strides": a["strides"],
                            "alias": arg_tensor_index[alias]})
        else:
            outputs.append({"dtype": _DTYPE_NAMES[o["dtype"]], "sizes": [int(x) for x in o["sizes"]],
                            "strides": [int(x) for x in o["strides"]], "alias": -1})
    # then what the op writes without returning it (the signature fixes which: training=True)
    hidden = hidden_writes(fn, *calls[0])
    for i in hidden:
        a = args["args"][i]
        outputs.append({"dtype": a["dtype"], "sizes": a["sizes"], "strides": a["strides"],
                        "alias": arg_tensor_index[i]})
    scalars = []
    for a in args["args"]:
        if a["kind"] in ("tensor", "tensor_list"):
            continue
        s = {"name": a["name"], "kind": a["kind"]}
        if "value" in a:
            s["value"] = a["value"]
        scalars.append(s)

    os.makedirs(os.path.join(job_dir, "cases"), exist_ok=True)
    # random values are drawn where the tensors are (check_tunable: all on the call's device)
    gen = torch.Generator(device=device).manual_seed(seed)
    names = [n for n, _ in tensor_args(args)]
    cases = []
    case_bytes = 0

    def write_files(c: int, what: str, tensors: list) -> list[str]:
        nonlocal case_bytes
        files = []
        for j, t in enumerate(tensors):
            files.append(f"c{c}_{what}{j}.bin")
            with open(os.path.join(job_dir, "cases", files[-1]), "wb") as f:
                case_bytes += write_span(f, t)
        return files

    def add_case(kind: str, pos: list, kw: dict):
        c = len(cases)
        ins = tensors_of(list(pos) + list(kw.values()))  # a tensor list's elements in its place
        if len(ins) != len(inputs):
            raise NotTunable(f"{info['signature']}: a call holds {len(ins)} tensors, the "
                             f"signature {len(inputs)}")
        work, kwork = clone_written(fn, pos, kw)  # ins keep the values from before the call
        with bypass():
            outs = tensors_of(fn(*work, **kwork))
        outs += [arg_value(fn, work, kwork, i) for i in hidden]  # as eager left them
        if len(outs) != len(outputs):
            raise NotTunable(f"{info['signature']}: eager returned {len(outs)} tensors, the "
                             f"signature records {len(outputs)}")
        cases.append({"kind": kind, "inputs": write_files(c, "in", ins),
                      "outputs": write_files(c, "out", outs)})

    for (pos, kw), rec in zip(calls, recorded):
        add_case("recorded" if rec else "example", pos, kw)
    first_pos, first_kw = calls[0]
    for v in range(random_inputs):
        ts = tensors_of(list(first_pos) + list(first_kw.values()))
        rnd = [random_like(t, v, op, n, gen) for t, n in zip(ts, names)]
        pos, kw = call_from_args(fn, args, rnd)
        add_case("random", pos, kw)

    work, kwork = clone_written(fn, first_pos, first_kw)
    with bypass():
        eager_us = bench_us(lambda: fn(*work, **kwork), device, reps=bench_reps)
        out_dtype = tensors_of(fn(*work, **kwork))[0].dtype
        moved = bytes_moved(info, args)
        bw = copy_bandwidth_gbs(device, moved)
    atol, rtol = tolerance(op, out_dtype)
    search = dict(search or {})
    if not search.get("candidate_timeout_s"):
        # verifying a candidate reads back and compares every case: scale with the data
        search["candidate_timeout_s"] = round(10 + 10 * case_bytes / 1e9, 1)
    job = {
        "format": 1, "op": op, "signature": info["signature"], "sig_hex": info["sig_hex"],
        "torch_version": info["torch_version"], "outputs_layout": info["outputs"],
        "backend": "nvrtc" if device.type == "cuda" else "host",
        "device_index": info["device_index"], "inputs": inputs, "outputs": outputs,
        "scalars": scalars, "cases": cases, "eager_us": eager_us, "bytes_moved": moved,
        "bandwidth_gbs": bw, "atol": atol, "rtol": rtol, "search": search,
        "key": key,
    }
    with open(os.path.join(job_dir, "job.json"), "w") as f:
        json.dump(job, f, indent=1)
    return job


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def worker_path() -> str:
    p = os.environ.get("KFORGE_WORKER") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "kforge-worker")
    if not os.access(p, os.X_OK):
        raise KernelForgeError(f"the forge worker is missing: {p} (reinstall kernel_forge, or set "
                               "KFORGE_WORKER)")
    return p


def run_worker(job_dir: str, *, extra_args=(), on_progress=None, proc_holder=None) -> dict:
    """Run kforge-worker on a job folder; `on_progress(event)` gets each progress line."""
    cmd = [worker_path(), job_dir, "--progress", *extra_args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc_holder is not None:
        proc_holder.append(p)
    try:
        for line in p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if on_progress:
                on_progress(ev)
        err = p.stderr.read()
        rc = p.wait()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if proc_holder is not None:
            proc_holder.remove(p)
    path = os.path.join(job_dir, "result.json")
    if rc != 0 or not os.path.exists(path):
        raise KernelForgeError(f"the forge worker failed on {job_dir} (exit {rc}): "
                               f"{err.strip()[-2000:]}")
    with open(path) as f:
        return json.load(f)


def jobs_root() -> str:
    from . import cache_dir
    return os.environ.get("KFORGE_JOBS_DIR") or os.path.join(cache_dir(), "jobs")


def new_job_dir(op: str, key: str) -> str:
    root = jobs_root()
    os.makedirs(root, mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = os.path.join(root, f"{stamp}-{op.split('::')[-1]}-{key}")
    d, i = base, 1
    while os.path.exists(d):
        i += 1
        d = f"{base}-{i}"
    os.makedirs(d, mode=0o700)
    return d


class ProgressBar:
    """One line on stderr: iterations, best speedup so far, ETA."""

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.t0 = time.monotonic()

    def __call__(self, ev: dict):
        if ev.get("event") != "node":
            return
        it, n = ev["iteration"], max(ev["iterations"], 1)
        best = f"{ev['eager_us'] / ev['best_us']:5.2f}x" if ev.get("best_us") else "    -"
        el = time.monotonic() - self.t0
        eta = el / it * (n - it) if it else 0.0
        bar = "#" * int(20 * it / n)
        self.stream.write(f"\r{self.label[:48]:48s} [{bar:20s}] {it:3d}/{n} best "
                          f"{best}  ETA {eta:5.0f}s")
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()
