"""Tuning jobs: the job folder the forge worker reads (forge/job/job.h), and running the worker.

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
import shutil
import stat
import statistics
import subprocess
import sys
import time

import torch

from . import _native
from ._native import KernelForgeError

# kf_dtype codes (include/kforge.h) <-> names (common/signature.c) <-> torch dtypes
_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                 "f64": torch.float64, "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16,
                 "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}
_KINDS_OK = {"tensor", "tensor_list", "i", "d", "b", "s", "n", "l", "wrapped", "device"}
FLUSH_BYTES = 256 << 20  # larger than any GPU's L2, as the worker's evaluator uses
COPY_PROBE_BYTES = 1 << 30  # each buffer of the CUDA copy-bandwidth probe, at most
# Measurements run in the user's process, beside the model: what they allocate on a GPU is at most
# this fraction of its free memory (a smaller flush or probe, or none), so the model never runs
# out of memory because of them.
MEASURE_FREE_FRACTION = 1 / 16
MAX_KERNEL_TENSORS = 16  # a kernel's pointer arguments: inputs + fresh outputs (KF_LAUNCH_MAX_ARGS)


class NotTunable(KernelForgeError):
    """The signature cannot become a job (an argument a kernel cannot take)."""


def min_free_bytes(total: int) -> int:
    """What writing job cases leaves free on the jobs' disk: KFORGE_JOBS_MIN_FREE_GB, else 5% of
    the disk and at least 2 GB (a model's warm-up writes every job before it searches one)."""
    v = os.environ.get("KFORGE_JOBS_MIN_FREE_GB")
    if v:
        try:
            return int(max(float(v), 0.0) * 1e9)
        except ValueError:
            raise KernelForgeError(f"KFORGE_JOBS_MIN_FREE_GB={v!r} is not a number of GB")
    return max(2 * 10**9, total // 20)


def existing_folder(path: str) -> str:
    """path, or its nearest parent folder that exists (where a folder to be made will be)."""
    where = os.path.abspath(path)
    while not os.path.isdir(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    return where


def check_disk(job_dir: str, need: int, what: str) -> None:
    """NotTunable when writing `need` bytes of cases to job_dir would leave less than
    min_free_bytes on its disk: a job is not worth filling the user's disk."""
    where = existing_folder(job_dir)  # tune()'s job_dir is made later
    du = shutil.disk_usage(where)
    keep = min_free_bytes(du.total)
    if du.free - need < keep:
        raise NotTunable(f"{what}: its cases take {need / 1e6:.1f} MB and {where} has "
                         f"{du.free / 1e9:.1f} GB free, keeping {keep / 1e9:.1f} GB free "
                         "(KFORGE_JOBS_MIN_FREE_GB)")


JOB_IDLE_S = 600  # a job folder none of whose files changed for this long is no search's


def _tree_bytes(path: str) -> int:
    """Bytes of the regular files under path, links not followed."""
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, f))
                n += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return n


def job_folders(root: str) -> list[dict]:
    """Every job folder under root (one holding job.json): path, state ("done": result.json
    written; "running": a file changed in the last JOB_IDLE_S; "unfinished"), bytes, case_bytes."""
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    now = time.time()
    for name in names:
        path = os.path.join(root, name)
        if os.path.islink(path) or not os.path.isfile(os.path.join(path, "job.json")):
            continue
        times = [os.path.getmtime(os.path.join(path, f)) for f in
                 ("job.json", "progress.jsonl", "result.json") if os.path.exists(os.path.join(path, f))]
        idle = now - max(times) >= JOB_IDLE_S
        done = os.path.exists(os.path.join(path, "result.json"))
        out.append({"path": path, "name": name,
                    "state": "running" if not idle else "done" if done else "unfinished",
                    "bytes": _tree_bytes(path), "case_bytes": _tree_bytes(os.path.join(path, "cases"))})
    return out


def drop_cases(job_dir: str | None) -> None:
    """Remove a finished job's cases (the inputs and eager's outputs of each call, a GB for one
    large signature); tree.json, the candidates and result.json stay. KFORGE_KEEP_CASES=1 keeps
    them, to run the worker on the folder again."""
    if job_dir and os.environ.get("KFORGE_KEEP_CASES") != "1":
        remove_cases(job_dir)


def remove_cases(job_dir: str) -> None:
    """drop_cases whatever KFORGE_KEEP_CASES says (`kforge jobs clean`)."""
    shutil.rmtree(os.path.join(job_dir, "cases"), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(job_dir, "confirm.pt"))


@contextlib.contextmanager
def bypass():
    """This thread's ATen calls go to the original kernels, unrecorded (other threads unaffected)."""
    lib = _native.lib()
    lib.kf_set_thread_bypass(1)
    try:
        yield
    finally:
        lib.kf_set_thread_bypass(0)


def kf_dtype_code(dtype: torch.dtype) -> int:
    """torch dtype -> kf_dtype code through C's table (0, KF_DTYPE_UNKNOWN, when not in it)."""
    name = next((n for n, t in _TORCH_DTYPES.items() if t == dtype), None)
    return _native.lib().kf_dtype_from_name(name.encode()) if name else 0


def tolerance(op: str, dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) for op's outputs of dtype: C's table (kf_tolerance, common/tolerance.c)."""
    code = kf_dtype_code(dtype)
    atol, rtol = ctypes.c_double(), ctypes.c_double()
    if _native.lib().kf_tolerance(op.encode(), code, ctypes.byref(atol), ctypes.byref(rtol)):
        raise KernelForgeError(f"{op}: no tolerance for dtype {dtype}")
    return atol.value, rtol.value


def tolerance_flipped(dtype: torch.dtype) -> float:
    """The rtol of an output from a value that may round one ulp apart (kf_tolerance_flipped)."""
    atol, rtol = ctypes.c_double(), ctypes.c_double()
    _native.lib().kf_tolerance_flipped(kf_dtype_code(dtype), ctypes.byref(atol), ctypes.byref(rtol))
    return rtol.value


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


# Gathers read from their source only the elements they pick, one per output element: the
# embedding of 4 tokens reads 4 rows of a 262144-row table, not the table (counted whole, the
# roofline was 290 us for a 6 us op, and every correct kernel was flagged as too fast to trust).
_GATHER_SOURCE = {"embedding": "weight", "index_select": "self", "gather": "self"}
GATHER_SOURCE_REUSE_BYTES = 64 << 20  # write_job: a source this large is not drawn again per case


def _tensor_bytes(info: dict, args: dict, gathers: bool) -> int:
    skip = None
    if info["op"].split("::")[-1].split(".")[0] in _OVERWRITE_SELF:
        skip = next((o["alias_arg"] for o in info["outputs"] or [] if o["alias_arg"] >= 0), None)
    source = _GATHER_SOURCE.get(info["op"].split("::")[-1].split(".")[0]) if gathers else None
    picked = sum(_prod(o["sizes"]) for o in info["outputs"] or [] if o["alias_arg"] < 0)
    total = 0
    for i, a in enumerate(args["args"]):
        if i == skip:
            continue
        ts = [a] if a["kind"] == "tensor" else a.get("tensors", []) if a["kind"] == "tensor_list" \
            else []
        for t in ts:
            if all(n > 0 for n in t["sizes"]):
                span = 1 + sum((n - 1) * st for n, st in zip(t["sizes"], t["strides"]))
                n = min(span, _prod(t["sizes"]))
                if a["name"] == source:
                    n = min(n, picked)
                total += n * _itemsize(t["dtype"])
    for o in info["outputs"] or []:
        if o["alias_arg"] >= 0:
            a = args["args"][o["alias_arg"]]
            n, es = _prod(a["sizes"]), _itemsize(a["dtype"])
        else:
            n, es = _prod(o["sizes"]), _itemsize(_native.dtype_name(o["dtype"]))
        total += n * es
    return total


def bytes_moved(info: dict, args: dict) -> int:
    """Bytes a call of this signature must read and write, at least (the roofline's bytes): each
    tensor it reads (a tensor list's elements too), the smaller of its span and its elements (an
    expanded tensor repeats addresses, a slice skips part of its span: a roofline asking for more
    than the op moves would call a copy-speed kernel too fast to trust), a gather's source only
    as many elements as it picks (_GATHER_SOURCE), and each output (one written in place counts
    again), except the destination of copy_/fill_/zero_: written only."""
    return _tensor_bytes(info, args, True)


def first_output_bytes(info: dict, args: dict) -> int:
    """The bytes of a call's first output (an in-place op's: its destination), what a later
    call reading it reads."""
    outs = info["outputs"] or []
    if not outs:
        return 0
    o = outs[0]
    if o["alias_arg"] >= 0:
        a = args["args"][o["alias_arg"]]
        return _prod(a["sizes"]) * _itemsize(a["dtype"])
    return _prod(o["sizes"]) * _itemsize(_native.dtype_name(o["dtype"]))


def footprint_bytes(info: dict, args: dict) -> int:
    """bytes_moved with a gather's source whole: what a copy of a call's tensors takes (a captured
    embedding call holds its table)."""
    return _tensor_bytes(info, args, False)


def check_tunable(info: dict, args: dict) -> None:
    sig = info["signature"]
    for a in args["args"]:
        if a["kind"] not in _KINDS_OK:
            what = ("an opaque value (a type, or a tensor list element, that a signature cannot "
                    "describe exactly)" if a["kind"] == "opaque"
                    else f"a {a['kind'].replace('_', ' ')}")
            raise NotTunable(f"{sig}: argument '{a['name']}' is {what}, which a kernel cannot take")
        if a["kind"] == "wrapped" and "scalar" not in a:
            raise NotTunable(f"{sig}: argument '{a['name']}' is a Python number of type "
                             f"{a.get('dtype')}, which a kernel cannot take")
        if a["kind"] in ("d", "wrapped") and "text" in a:
            raise NotTunable(f"{sig}: argument '{a['name']}' is {a['text']}")
        if a["kind"] == "device" and not names_call_device(a, info):
            where = a["device"] if a["device_index"] < 0 else f"{a['device']}:{a['device_index']}"
            raise NotTunable(f"{sig}: argument '{a['name']}' is {where}, not the call's device "
                             f"{info['device']}:{info['device_index']}")
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
        if o["alias_arg"] < 0 and _native.dtype_name(o["dtype"]) not in _TORCH_DTYPES:
            raise NotTunable(f"{sig}: an output has dtype {_native.dtype_name(o['dtype'])}")


def resolve(op: str):
    name = op if "::" in op else f"aten::{op}"
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
    except (AttributeError, RuntimeError) as e:
        raise KernelForgeError(f"unknown operator {name}") from e


def scalar_value(a: dict):
    """The Python value of a decoded scalar argument: kinds d, i, b, and a wrapped Python number
    (its "scalar" kind). Passing it to the op again as that Python number lets torch wrap it as
    the user's call did, so eager promotes dtypes the same way (bf16 tensor + float stays bf16)."""
    k = a["scalar"] if a["kind"] == "wrapped" else a["kind"]
    if k == "d":
        return float(a["text"]) if "text" in a else float(a["value"])
    return int(a["value"]) if k == "i" else bool(a["value"])


def names_call_device(a: dict, info: dict) -> bool:
    """A device argument (`.to(dtype)` passes the tensor's own) names the call's device exactly:
    `cuda` without an index is the current device, which the signature does not fix."""
    if a["device"] != info["device"]:
        return False
    return a["device_index"] == info["device_index"] or (a["device"] == "cpu"
                                                        and a["device_index"] < 0)


def job_scalar(name: str, a: dict) -> dict:
    """A decoded non-tensor argument as a job scalar (forge/job/sig.h). A device argument is the
    call's own (check_tunable), so to a kernel it is None: its outputs are on the call's device."""
    if a["kind"] == "wrapped":  # a scalar under its name, not in inputs
        return {"name": name, "kind": a["scalar"], "value": a["value"], "wrapped": True}
    if a["kind"] == "device":
        return {"name": name, "kind": "n"}
    s = {"name": name, "kind": a["kind"]}
    if "value" in a:
        s["value"] = a["value"]
    return s


def call_from_args(fn, args: dict, tensors: list) -> tuple[list, dict]:
    """Positional and keyword arguments for `fn` from decoded arguments and the flat tensors of a
    call (tensor_args order: a tensor list takes as many as the signature's list holds; a wrapped
    Python number takes none, it is the signature's value)."""
    it = iter(tensors)
    pos, kw = [], {}
    schema_args = fn._schema.arguments
    for spec, a in zip(schema_args, args["args"]):
        k = a["kind"]
        if k == "tensor":
            v = next(it)
        elif k == "tensor_list":
            v = [next(it) for _ in a["tensors"]]
        elif k in ("d", "i", "b", "wrapped"):
            v = scalar_value(a)
        elif k == "l":
            v = [int(x) for x in a["value"]]
        elif k == "s":
            v = a["value"]
        elif k == "device":
            v = torch.device(a["device"], a["device_index"]) if a["device_index"] >= 0 \
                else torch.device(a["device"])
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


# A CUDA span is copied to the host through a pinned buffer of this size, one per process: a copy
# into pageable memory goes through the driver's staging, and on the H200 the model's launches
# beside it stalled for up to 100 ms while a tuner prepared a job.
STAGE_BYTES = 8 << 20
_stage = None


def _pinned_stage() -> torch.Tensor:
    global _stage
    if _stage is None:
        _stage = torch.empty(STAGE_BYTES, dtype=torch.uint8, pin_memory=True)
    return _stage


def _staged(raw: torch.Tensor, sink) -> None:
    """The bytes of the CUDA uint8 tensor `raw` handed to sink(memoryview) in order, through the
    pinned stage, copied on a stream of its own after the work queued on the current one (raw
    was written there): the model's stream never waits behind the copy."""
    stage = _pinned_stage()
    side = torch.cuda.Stream(device=raw.device)
    side.wait_stream(torch.cuda.current_stream(raw.device))
    for off in range(0, raw.numel(), STAGE_BYTES):
        m = min(STAGE_BYTES, raw.numel() - off)
        with torch.cuda.stream(side):
            stage[:m].copy_(raw[off:off + m], non_blocking=True)
        side.synchronize()
        sink(memoryview((ctypes.c_char * m).from_address(stage.data_ptr())))


def write_span(f, t: torch.Tensor) -> int:
    """Write the tensor's strided span, element 0 to its last addressed element (forge/job/job.h);
    returns its bytes. Written from host memory as it is (a CUDA span through _staged)."""
    n = span_numel(t)
    if n == 0:
        return 0
    flat = t.detach().as_strided((n,), (1,))
    nbytes = n * t.element_size()
    if flat.device.type == "cuda":
        _staged(flat.view(torch.uint8), f.write)
    else:
        f.write(memoryview((ctypes.c_char * nbytes).from_address(flat.data_ptr())))
    return nbytes


def host_exact(t):
    """clone_exact on the host: a CUDA tensor's storage copied through _staged, the same sizes,
    strides and storage offset over it (device_exact puts it back); lists and dicts element by
    element; anything else as it is."""
    if isinstance(t, dict):
        return {k: host_exact(v) for k, v in t.items()}
    if isinstance(t, (list, tuple)):
        return type(t)(host_exact(x) for x in t)
    if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
        return t
    n = t.untyped_storage().nbytes()
    host = torch.empty(n, dtype=torch.uint8)
    if n:
        raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))
        at = [0]

        def sink(mv):
            host[at[0]:at[0] + len(mv)].copy_(torch.frombuffer(mv, dtype=torch.uint8))
            at[0] += len(mv)

        _staged(raw, sink)
    return _on_storage(t.detach(), host.untyped_storage())


def device_exact(t, device: torch.device):
    """A host tensor (host_exact's) on `device` with the same sizes, strides and storage offset
    (so the same alignment: a signature records it); lists and dicts element by element."""
    if isinstance(t, dict):
        return {k: device_exact(v, device) for k, v in t.items()}
    if isinstance(t, (list, tuple)):
        return type(t)(device_exact(x, device) for x in t)
    if not isinstance(t, torch.Tensor) or device.type == "cpu":
        return t
    storage = torch.empty(t.untyped_storage().nbytes(), dtype=torch.uint8, device=device)
    storage.copy_(torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage()))
    return _on_storage(t, storage.untyped_storage())


def _on_storage(t: torch.Tensor, storage) -> torch.Tensor:
    """A tensor with t's sizes, strides and storage offset over `storage` (on its device)."""
    out = torch.empty(0, dtype=t.dtype, device=storage.device)
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


_SHIFT_INVARIANT = {"_softmax", "_log_softmax", "softmax", "log_softmax", "_safe_softmax",
                    "logsumexp"}


def shift_invariant_dim(op: str, dim):
    """The reduced dim of an op whose result does not depend on the maximum it subtracts
    (softmax, log_softmax, logsumexp), else None."""
    if op.split("::")[-1].split(".")[0] not in _SHIFT_INVARIANT:
        return None
    if isinstance(dim, (list, tuple)):
        dim = dim[0] if len(dim) == 1 else None
    return dim if isinstance(dim, int) and not isinstance(dim, bool) else None


def _row_offsets(t: torch.Tensor, dim: int, mag: float):
    """Add -mag or +mag to each row (a slice along `dim`) by the parity of its index in the
    other dims: every row's neighbours sit 2*mag away. A softmax that subtracts another row's
    maximum then underflows exp to 0 (0/0) instead of being saved by shift invariance."""
    if t.dim() < 2 or torch._debug_has_internal_overlap(t) != 0:
        return
    dim %= t.dim()
    par = torch.zeros((), dtype=torch.int64, device=t.device)
    for d in range(t.dim()):
        if d != dim:
            shape = [1] * t.dim()
            shape[d] = t.shape[d]
            par = par + torch.arange(t.shape[d], device=t.device).view(shape)
    t.add_(((par % 2) * (2 * mag) - mag).to(t.dtype))


# Index arguments of the gathers: (op base name, index argument) -> (source argument, its dim:
# an int, or the name of the argument holding it). Random indices are drawn in [0, size): any
# other value is eager's error, not a case.
_INDEX_ARGS = {("embedding", "indices"): ("weight", 0), ("index_select", "index"): ("self", "dim"),
               ("gather", "index"): ("self", "dim")}


def index_bound(op: str, name: str, args: dict) -> int | None:
    """The number of valid values of index argument `name` of a gather op (the size of the dim
    it indexes), else None."""
    src = _INDEX_ARGS.get((op.split("::")[-1].split(".")[0], name))
    if src is None:
        return None
    by_name = {a["name"]: a for a in args["args"]}
    t, dim = by_name.get(src[0]), src[1]
    if isinstance(dim, str):
        dim = by_name.get(dim, {}).get("value")
    if t is None or t.get("kind") != "tensor" or not isinstance(dim, int) or not t["sizes"]:
        return None
    return int(t["sizes"][dim % len(t["sizes"])])


def call_index_bound(op: str, fn, pos: list, kw: dict, i: int) -> int | None:
    """index_bound() of argument i (schema order) of a call, from the call's own values."""
    names = [a.name for a in fn._schema.arguments]
    src = _INDEX_ARGS.get((op.split("::")[-1].split(".")[0], names[i] if i < len(names) else ""))
    if src is None or src[0] not in names:
        return None
    t = arg_value(fn, pos, kw, names.index(src[0]))
    dim = src[1] if isinstance(src[1], int) else \
        arg_value(fn, pos, kw, names.index(src[1])) if src[1] in names else None
    if not isinstance(t, torch.Tensor) or not isinstance(dim, int) or t.dim() == 0:
        return None
    return int(t.shape[dim % t.dim()])


def random_like(t: torch.Tensor, variant: int, op: str, name: str, gen: torch.Generator,
                row_dim: int | None = None, index_bound: int | None = None):
    """Random values laid out exactly like `t`, drawn by `gen` on its own device (a CUDA
    generator for a CUDA tensor: no host randn and copy of the whole storage): scale 1, 100 and
    0.01 in turn; -inf masks for softmax; variances kept positive (a negative running_var only
    tests NaN propagation); a triangular solve's matrix well conditioned (see below). `row_dim`
    (shift_invariant_dim): the scale-100 variant puts the rows at offsets of -+500 (-+1000 for
    float64), so that a kernel taking a row maximum from another row's data is wrong.
    `index_bound` (index_bound()): the integer values are drawn in [0, index_bound)."""
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
        if variant % 3 == 1 and row_dim is not None:
            _row_offsets(out, row_dim, 1000.0 if t.dtype == torch.float64 else 500.0)
        if "solve_triangular" in op and name == "self" and t.dim() >= 2:
            _condition_triangular(out, scale)
    elif t.dtype == torch.bool:
        flat.copy_(torch.rand(flat.shape, generator=gen, device=dev) > 0.5)
    elif index_bound is not None:  # a gather's indices: in range
        flat.copy_(torch.randint(0, max(index_bound, 1), flat.shape, generator=gen,
                                 device=dev).to(t.dtype))
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


def cuda_memory(device: torch.device) -> tuple[int, int]:
    """(free bytes of the device, its L2 size in bytes or 0 when unknown)."""
    free, _ = torch.cuda.mem_get_info(device)
    return int(free), int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)


def flush_bytes(free: int, l2: int) -> int:
    """The L2-flush buffer's size: the worker's FLUSH_BYTES, at most MEASURE_FREE_FRACTION of the
    free memory; 0 (no flush: eager timed with warm caches, which only makes it harder to beat)
    when what fits would not evict twice the L2 (or the L2 is unknown and less than FLUSH_BYTES fits)."""
    n = min(FLUSH_BYTES, int(free * MEASURE_FREE_FRACTION))
    return n if n >= (2 * l2 if l2 else FLUSH_BYTES) else 0


def copy_probe_bytes(free: int, l2: int) -> int:
    """Each buffer of the copy-bandwidth probe: COPY_PROBE_BYTES, both buffers together at most
    MEASURE_FREE_FRACTION of the free memory; 0 (bandwidth unknown) when what fits is too small
    to run from DRAM (less than 4x the L2 or 64 MB)."""
    n = min(COPY_PROBE_BYTES, int(free * MEASURE_FREE_FRACTION) // 2)
    return n if n >= max(4 * l2, 64 << 20) else 0


def bench_us(fn, device: torch.device, reps: int = 20, flush_l2: bool = True) -> float:
    """Median time of fn in us, as the worker times candidates: 3 warm-ups, then each run timed
    alone (CUDA events around the call on a private stream, L2 flushed before each run; wall
    clock on the host)."""
    if device.type == "cuda":
        return _bench_cuda_us(fn, device, reps, flush_l2)
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


def call_floor_us(device: torch.device, reps: int = 20) -> float:
    """What an eager call that does no work costs on the host, timed like eager (an op overload's
    Python call and the dispatcher: aten::alias of an empty tensor). The worker times a host
    candidate as a bare function call, so its "too fast to trust" check adds this back. 0 on
    CUDA, where eager and candidates are both timed by events around the launch."""
    if device.type == "cuda":
        return 0.0
    t, alias = torch.empty(0), torch.ops.aten.alias.default
    return bench_us(lambda: alias(t), device, reps=reps)


def _bench_cuda_us(fn, device: torch.device, reps: int, flush_l2: bool) -> float:
    """On a stream of our own (PyTorch's pool streams do not synchronize with the legacy default
    stream): the model's kernels, on its streams, neither land between our events nor queue
    behind our runs. The flush buffer is bounded by the free memory (flush_bytes)."""
    n = flush_bytes(*cuda_memory(device)) if flush_l2 else 0
    stream = torch.cuda.Stream(device=device)
    stream.wait_stream(torch.cuda.current_stream(device))  # fn's inputs were written there
    times = []
    scratch = None
    try:
        with torch.cuda.stream(stream):
            scratch = torch.empty(n, dtype=torch.uint8, device=device) if n else None
            for _ in range(3):
                fn()
            for _ in range(reps):
                if scratch is not None:
                    scratch.zero_()
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(stream)
                fn()
                b.record(stream)
                b.synchronize()
                times.append(a.elapsed_time(b) * 1e3)
    finally:
        # nothing of ours still runs when its memory (allocated on this stream) is freed
        stream.synchronize()
        del scratch
    return statistics.median(times)


_bandwidth = {}


def copy_bandwidth_gbs(device: torch.device, nbytes: int) -> float:
    """Read+write GB/s of a copy. On CUDA one big copy (the DRAM ceiling), of at most
    2 x COPY_PROBE_BYTES and MEASURE_FREE_FRACTION of the free memory: 0.0 (unknown, as job.json
    takes it; tried again on the next call) when that is too small; on the host a copy of the op's
    own size, so that an op whose data sits in the caches is compared with a copy that does too."""
    key = (str(device), 0 if device.type == "cuda" else max(nbytes // 2, 4096))
    if key not in _bandwidth:
        n = copy_probe_bytes(*cuda_memory(device)) if device.type == "cuda" else key[1]
        if not n:
            return 0.0
        # on CUDA no fill: a kernel on this thread's stream (the model's) is not needed for a copy
        src = (torch.empty if device.type == "cuda" else torch.ones)(n, dtype=torch.uint8, device=device)
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
            outputs.append({"dtype": _native.dtype_name(o["dtype"]), "sizes": [int(x) for x in o["sizes"]],
                            "strides": [int(x) for x in o["strides"]], "alias": -1})
    # then what the op writes without returning it (the signature fixes which: training=True)
    hidden = hidden_writes(fn, *calls[0])
    for i in hidden:
        a = args["args"][i]
        outputs.append({"dtype": a["dtype"], "sizes": a["sizes"], "strides": a["strides"],
                        "alias": arg_tensor_index[i]})
    scalars = [job_scalar(a["name"], a) for a in args["args"]
               if a["kind"] not in ("tensor", "tensor_list")]

    check_disk(job_dir, (len(calls) + random_inputs) * footprint_bytes(info, args), info["signature"])
    os.makedirs(os.path.join(job_dir, "cases"), exist_ok=True)
    # random values are drawn where the tensors are (check_tunable: all on the call's device)
    gen = torch.Generator(device=device).manual_seed(seed)
    names = [n for n, _ in tensor_args(args)]
    cases = []
    case_bytes = 0

    written = {}  # id of a tensor reused by later cases -> its file

    def write_files(c: int, what: str, tensors: list) -> list[str]:
        nonlocal case_bytes
        files = []
        for j, t in enumerate(tensors):
            if id(t) in written:
                files.append(written[id(t)])
                continue
            files.append(f"c{c}_{what}{j}.bin")
            if any(t is r for r in reused):
                written[id(t)] = files[-1]
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

    first_pos, first_kw = calls[0]
    # a large gather source (a vocabulary's embedding table) stays the first call's in the random
    # cases, whose indices vary: one file instead of one per case, read once by the evaluator
    source = _GATHER_SOURCE.get(op.split("::")[-1].split(".")[0])
    first = tensors_of(list(first_pos) + list(first_kw.values()))
    reused = [t for t, n in zip(first, names)
              if n == source and t.untyped_storage().nbytes() >= GATHER_SOURCE_REUSE_BYTES]
    for (pos, kw), rec in zip(calls, recorded):
        add_case("recorded" if rec else "example", pos, kw)
    dim = next((a.get("value") for a in args["args"] if a.get("name") == "dim"), None)
    row_dim = shift_invariant_dim(op, dim)
    for v in range(random_inputs):
        rnd = [t if any(t is r for r in reused) else
               random_like(t, v, op, n, gen, row_dim if n == "self" else None,
                           index_bound(op, n, args))
               for t, n in zip(first, names)]
        pos, kw = call_from_args(fn, args, rnd)
        add_case("random", pos, kw)

    work, kwork = clone_written(fn, first_pos, first_kw)
    with bypass():
        eager_us = bench_us(lambda: fn(*work, **kwork), device, reps=bench_reps)
        floor_us = min(call_floor_us(device, bench_reps), eager_us)
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
        "scalars": scalars, "cases": cases, "eager_us": eager_us,
        "call_floor_us": floor_us, "bytes_moved": moved,
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


def run_worker(job_dir: str, *, extra_args=(), on_progress=None, proc_holder=None,
               popen_kw: dict | None = None, gate=None) -> dict:
    """Run kforge-worker on a job folder; `on_progress(event)` gets each progress line;
    `popen_kw`: more subprocess.Popen arguments (the online tuner's env and preexec_fn);
    `gate(event)`: the worker runs with --gate, and each candidate's timing waits until this
    returns (the online tuner waits for a quiet gap in the model's calls)."""
    if not os.path.isdir(os.path.join(job_dir, "cases")):
        raise KernelForgeError(f"{job_dir}: its cases were removed when its job finished "
                               "(KFORGE_KEEP_CASES=1 keeps them)")
    # --parent: the worker dies with this process (and exits if it is gone already)
    cmd = [worker_path(), job_dir, "--progress", "--parent", str(os.getpid()), *extra_args,
           *(["--gate"] if gate else [])]
    kw = dict(popen_kw or {}, **({"stdin": subprocess.PIPE} if gate else {}))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if proc_holder is not None:
        proc_holder.append(p)
    try:
        for line in p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if gate and ev.get("event") == "gate":
                gate(ev)
                try:
                    p.stdin.write("go\n")
                    p.stdin.flush()
                except (BrokenPipeError, OSError, ValueError):
                    pass  # the worker ended meanwhile: its exit status says why
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
