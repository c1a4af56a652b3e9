"""Kernel Forge: serve verified, specialized kernels in place of eager ATen kernels.

Importing the package loads the plugin: from then on the ops of the intercept list are recorded
and, when a verified kernel exists for a call's exact signature, served by it; every other call
runs the original kernel, unchanged.
"""

from __future__ import annotations

import ctypes

from ._native import KernelForgeError, library_path
from . import _native

__all__ = [
    "KernelForgeError", "library_path", "load", "enable", "disable", "enabled",
    "intercepted_ops", "ops_info", "stats", "reset_stats", "set_recording", "signature_key",
    "__version__",
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


def ops_info() -> dict:
    """The intercept list as registered: per op, the dispatch keys and why any was skipped."""
    return _native.take_json(_native.lib().kf_ops_json(_native.runtime()))


def intercepted_ops() -> list[str]:
    """Ops intercepted on at least one dispatch key, named as the dispatcher names them."""
    return [o["op"] for o in ops_info()["ops"] if o["keys"]]


def stats() -> list[dict]:
    """Recorded calls per signature, hottest first.

    Keys: op, device, signature, key, calls, served, fallback, time_ms (estimated from sampled
    timings), share (of the recorded time measured the same way: CUDA device time, or host time),
    eager_us / served_us (mean sampled time per call, -1 when never sampled), intercepted (False
    for rows seen only by the op observer), time_source, servable, has_kernel.
    """
    doc = _native.take_json(_native.lib().kf_stats_json(_native.runtime()))
    rows = doc["rows"]
    # Device time (CUDA events) and host time are not comparable: each row's share is taken
    # among the rows measured the same way.
    totals = {}
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


def signature_key(op: str, *args, **kwargs) -> str:
    """Run `op` eagerly on the arguments and return the key of the signature it was recorded as.

    `op` is named as in stats(), e.g. "aten::_softmax" or "aten::add.Tensor".
    """
    import torch

    name = op if "::" in op else f"aten::{op}"
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns), base)
    fn = getattr(packet, overload or "default")
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


def _register_kernel(key: str, fn_address: int, user: int = 0) -> None:
    """Attach a C kernel (kf_kernel_fn address) to a signature key; 0 detaches. For tests and
    for the cache layer: the kernel is trusted as is, with no verification."""
    code = _native.lib().kf_register_kernel(_native.runtime(), int(key, 16), fn_address or None,
                                            user or None)
    if code:
        raise KernelForgeError(f"register kernel for {key}: {_native.status_str(code)}: "
                               f"{_native.errmsg()}")


load()
