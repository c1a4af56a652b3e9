"""Loading the plugin library and talking to its C API (include/kforge.h) through ctypes."""

from __future__ import annotations

import atexit
import ctypes
import glob
import json
import logging
import os
import threading

logger = logging.getLogger("kernel_forge")

_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}
_ENV_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
               "warn": logging.WARNING, "error": logging.ERROR}

_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_lock = threading.Lock()
_lib = None
_log_cb = None


class KernelForgeError(RuntimeError):
    """An error reported by the plugin, with its message."""


def library_path() -> str:
    """Path of the built plugin library inside the package."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_kforge*.so")))
    if not found:
        raise KernelForgeError(
            f"the kernel_forge plugin library is not built (no _kforge*.so in {here}); "
            "reinstall with `pip install .` from the source tree")
    return found[0]


def _on_log(level, msg, _user):
    try:
        logger.log(_LEVELS.get(level, logging.WARNING), msg.decode("utf-8", "replace"))
    except Exception:  # a logging failure must never unwind into C
        pass


def _configure_logger():
    name = os.environ.get("KFORGE_LOG", "").lower()
    if name in _ENV_LEVELS:
        logger.setLevel(_ENV_LEVELS[name])
        if not logger.handlers:
            h = logging.StreamHandler()
            h.setFormatter(logging.Formatter("kforge %(levelname)s: %(message)s"))
            logger.addHandler(h)


class MatchResult(ctypes.Structure):
    """kf_match_result (include/kforge.h)."""
    _fields_ = [("bad", ctypes.c_int64), ("first_bad", ctypes.c_int64),
                ("nonfinite_bad", ctypes.c_int64), ("max_abs", ctypes.c_double),
                ("max_rel", ctypes.c_double)]


def _bind(lib):
    c = ctypes
    sigs = {
        "kf_runtime_get": ([], c.c_void_p),
        "kf_runtime_errmsg": ([c.c_void_p], c.c_char_p),
        "kf_runtime_quiesce": ([c.c_void_p], None),
        "kf_version": ([], c.c_char_p),
        "kf_status_str": ([c.c_int], c.c_char_p),
        "kf_dtype_name": ([c.c_int], c.c_char_p),
        "kf_dtype_size": ([c.c_int], c.c_int),
        "kf_dtype_from_name": ([c.c_char_p], c.c_int),
        "kf_tolerance": ([c.c_char_p, c.c_int, c.POINTER(c.c_double), c.POINTER(c.c_double)],
                         c.c_int),
        "kf_tolerance_flipped": ([c.c_int, c.POINTER(c.c_double), c.POINTER(c.c_double)],
                                 c.c_int),
        "kf_match_dense": ([c.c_int, c.c_void_p, c.c_void_p, c.c_int64, c.c_double, c.c_double,
                            c.POINTER(MatchResult)], c.c_int64),
        "kf_set_log_callback": ([_LOG_FN, c.c_void_p], None),
        "kf_set_enabled": ([c.c_void_p, c.c_int], None),
        "kf_enabled": ([c.c_void_p], c.c_int),
        "kf_set_chains_enabled": ([c.c_void_p, c.c_int], None),
        "kf_chains_enabled": ([c.c_void_p], c.c_int),
        "kf_total_calls": ([c.c_void_p], c.c_uint64),
        "kf_stats_json": ([c.c_void_p], c.c_void_p),
        "kf_chains_json": ([c.c_void_p, c.c_uint64], c.c_void_p),
        "kf_chain_entries_json": ([c.c_void_p], c.c_void_p),
        "kf_chain_sig_hex": ([c.c_char_p, c.c_char_p, c.c_size_t], c.c_void_p),
        "kf_chain_kernel_add": ([c.c_void_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p,
                                 c.c_char_p, c.c_double, c.c_double, c.c_char_p,
                                 c.POINTER(c.c_void_p)], c.c_int),
        "kf_ops_json": ([c.c_void_p], c.c_void_p),
        "kf_reset_stats": ([c.c_void_p], None),
        "kf_free": ([c.c_void_p], None),
        "kf_probe_begin": ([c.c_void_p, c.c_char_p], None),
        "kf_probe_end": ([c.c_void_p, c.POINTER(c.c_uint64)], c.c_int),
        "kf_register_kernel": ([c.c_void_p, c.c_uint64, c.c_void_p, c.c_void_p], c.c_int),
        "kf_set_observer": ([c.c_void_p, c.c_int], c.c_int),
        "kf_intercept": ([c.c_void_p, c.c_int], c.c_int),
        "kf_reload_cache": ([c.c_void_p], c.c_int),
        "kf_set_poison": ([c.c_void_p, c.c_int], None),
        "kf_fail_next_checks": ([c.c_void_p, c.c_int], None),
        "kf_signature_info_json": ([c.c_void_p, c.c_uint64], c.c_void_p),
        "kf_signature_cache_key": ([c.c_void_p, c.c_uint64, c.c_char_p, c.c_char_p], c.c_int),
        "kf_candidate_register": ([c.c_void_p, c.c_uint64, c.c_char_p, c.c_char_p, c.c_char_p,
                                   c.POINTER(c.c_void_p)], c.c_int),
        "kf_candidate_insert": ([c.c_void_p, c.c_uint64, c.c_char_p, c.c_char_p], c.c_int),
        "kf_source_check_text": ([c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t], c.c_int),
        "kf_cache_entries_json": ([c.c_void_p], c.c_void_p),
        "kf_cache_dir_ls_json": ([c.c_char_p], c.c_void_p),
        "kf_cache_dir_show_json": ([c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t], c.c_void_p),
        "kf_cache_dir_rm": ([c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t], c.c_int),
        "kf_cache_dir_set_disabled": ([c.c_char_p, c.c_char_p, c.c_int, c.c_char_p, c.c_char_p,
                                       c.c_size_t], c.c_int),
        "kf_cache_dir_clear": ([c.c_char_p, c.c_char_p, c.c_size_t], c.c_int),
        "kf_cache_dir_export": ([c.c_char_p, c.c_char_p, c.c_char_p, c.POINTER(c.c_int),
                                 c.c_char_p, c.c_size_t], c.c_int),
        "kf_cache_dir_import": ([c.c_char_p, c.c_char_p, c.POINTER(c.c_int), c.c_char_p,
                                 c.c_size_t], c.c_int),
        "kf_cache_dir_verify_json": ([c.c_char_p, c.c_char_p, c.c_size_t], c.c_void_p),
        "kf_signature_args_json": ([c.c_void_p, c.c_uint64], c.c_void_p),
        "kf_capture_request": ([c.c_void_p, c.c_uint64, c.c_int], c.c_int),
        "kf_set_thread_bypass": ([c.c_int], None),
        "kf_chain_thread_watched": ([], c.c_int),
        "kf_op_hidden_writes": ([c.c_char_p, c.POINTER(c.c_uint32), c.POINTER(c.c_int)], c.c_int),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res


def _locate_cuda_toolkit():
    """Point the plugin at the NVRTC and CUDA headers that torch's CUDA wheels ship, unless the
    user chose others (KFORGE_NVRTC, KFORGE_CUDA_INCLUDE)."""
    if os.environ.get("KFORGE_NVRTC") and os.environ.get("KFORGE_CUDA_INCLUDE"):
        return
    try:
        import nvidia  # namespace package of the CUDA wheels
    except ImportError:
        return
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cuda_nvrtc", "cu12"):
            libs = sorted(glob.glob(os.path.join(base, sub, "lib", "libnvrtc.so.*[0-9]")))
            libs = [p for p in libs if "builtins" not in p and "alt" not in p]
            if libs and not os.environ.get("KFORGE_NVRTC"):
                os.environ["KFORGE_NVRTC"] = libs[0]
            inc = os.path.join(base, sub, "include")
            if os.path.exists(os.path.join(inc, "cuda_bf16.h")) and not os.environ.get("KFORGE_CUDA_INCLUDE"):
                os.environ["KFORGE_CUDA_INCLUDE"] = inc


def lib():
    """The loaded plugin (loading it on first use)."""
    global _lib, _log_cb
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        import torch  # the plugin needs libtorch loaded first

        path = library_path()
        _configure_logger()
        _locate_cuda_toolkit()
        if path not in getattr(torch.ops, "loaded_libraries", set()):
            # hold load-time messages until our sink is installed, then replay them
            os.environ["KFORGE_LOG_DEFER"] = "1"
            try:
                torch.ops.load_library(path)
            finally:
                os.environ.pop("KFORGE_LOG_DEFER", None)
        handle = ctypes.CDLL(path)  # the same handle torch loaded
        _bind(handle)
        _log_cb = _LOG_FN(_on_log)
        handle.kf_set_log_callback(_log_cb, None)
        atexit.register(handle.kf_set_log_callback, _LOG_FN(), None)
        # runs first (atexit is last-in first-out): the reload thread stops before the
        # interpreter finalizes, so it never calls the log callback into a dying interpreter
        atexit.register(handle.kf_runtime_quiesce, handle.kf_runtime_get())
        if not handle.kf_runtime_get():
            raise KernelForgeError("the plugin loaded but its runtime was not created "
                                   "(see the log above)")
        _lib = handle
        return _lib


def runtime():
    return lib().kf_runtime_get()


def intercept(all_ops: bool = True) -> None:
    """Register the interceptors not yet registered: every op of the list, or those of cache
    entries that appeared since load (KFORGE_INTERCEPT). Tuning, capturing and adding kernels
    need their op intercepted; a disabled plugin (KFORGE_DISABLE) has nothing to register."""
    lib().kf_intercept(runtime(), 1 if all_ops else 0)


def take_json(ptr):
    """Decode a JSON document returned by the C API and free it."""
    if not ptr:
        raise KernelForgeError("the plugin could not build its report (out of memory?)")
    try:
        return json.loads(ctypes.string_at(ptr).decode("utf-8"))
    finally:
        lib().kf_free(ptr)


def errmsg() -> str:
    return lib().kf_runtime_errmsg(runtime()).decode("utf-8", "replace")


def status_str(code: int) -> str:
    return lib().kf_status_str(code).decode()


def dtype_name(code: int) -> str:
    """The name of a kf_dtype code ("f32", "bf16", ...; "?" when unknown): C's dtype table."""
    return lib().kf_dtype_name(code).decode()


def source_check(backend: str, source: str) -> str | None:
    """The plugin's static source check (compile/source_check.c owns the rules): None when the
    source passes, else the reason. The host compiler also checks its preprocessor's output."""
    err = ctypes.create_string_buffer(1024)
    if lib().kf_source_check_text(backend.encode(), source.encode(), err, len(err)):
        return None
    return err.value.decode("utf-8", "replace")
