"""Every kernel body of the builtin templates (forge/templates/kernels/) compiles alone, so that a
syntax error in one is found without a GPU and without rendering a kernel.

A body compiles after its prefix, tests/template_bodies/<body>.h: what real renders print before
it (the shared pieces as #includes of their files), one or more variants chosen to take the
body's #if branches. Host bodies (host_*) go through cc -fsyntax-only with the flags the host
backend builds with; CUDA ones through nvcc --ptx for sm_90 or, without nvcc, NVRTC (KFORGE_NVRTC,
the loader path, /usr/local/cuda or the nvidia-cuda-nvrtc wheel). No compiler: skipped, saying so.
"""

import ctypes
import glob
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT

KERNELS = os.path.join(ROOT, "forge", "templates", "kernels")
PREFIXES = os.path.join(ROOT, "tests", "template_bodies")
BODIES = sorted(os.listdir(KERNELS))
# the host backend's flags that bear on the language (compile/compiler_host.c)
HOST_FLAGS = ["-std=c11", "-fopenmp", "-Werror=implicit-function-declaration"]
# the NVRTC backend's (compile/compiler_nvrtc.c); nvcc has no -default-device: every device
# function of a body says __device__
NVRTC_FLAGS = ["-std=c++17", "-default-device", "-arch=compute_90"]


def variants(body):
    with open(os.path.join(PREFIXES, body + ".h")) as f:
        for line in f:
            if line.startswith("#define KF_CHECK_VARIANTS "):
                return int(line.split()[2])
    raise AssertionError(f"{body}.h: no #define KF_CHECK_VARIANTS")


def unit(body):
    """The translation unit: the prefix, then the body, found by name (-I) so that a test can put
    another copy of a body first."""
    return f'#include "{body}.h"\n#include "{body}"\n'


def included_by_prefixes(body):
    for p in glob.glob(os.path.join(PREFIXES, "*.h")):
        with open(p) as f:
            if f'#include "{body}"' in f.read():
                return os.path.basename(p)
    return None


def test_every_body_is_compiled():
    """Each body has its prefix, or is part of another body's unit (the elementwise loop's head
    is not whole: the tail's prefix holds it); each prefix belongs to a body."""
    assert BODIES, KERNELS
    for body in BODIES:
        if not os.path.exists(os.path.join(PREFIXES, body + ".h")):
            assert included_by_prefixes(body), f"{body}: no tests/template_bodies/{body}.h"
    for p in os.listdir(PREFIXES):
        assert p.endswith(".h") and p[:-2] in BODIES, f"tests/template_bodies/{p}: no such body"


# ---- the compilers ----


def nvrtc_lib():
    """ctypes handle of libnvrtc, found as the C tests find it (tests/c/nvrtc_find.h), or None."""
    names = [os.environ.get("KFORGE_NVRTC", ""), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
             "/usr/local/cuda/lib64/libnvrtc.so"]
    try:
        import nvidia

        names += sorted(g for d in nvidia.__path__ for g in glob.glob(os.path.join(d, "*", "lib", "libnvrtc.so.*"))
                        if "builtins" not in g and "alt" not in g)[::-1]
    except ImportError:
        pass
    for n in names:
        if not n:
            continue
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    return None


def cuda_include():
    e = os.environ.get("KFORGE_CUDA_INCLUDE")
    for d in [e] if e else ["/usr/local/cuda/include"]:
        if d and os.path.exists(os.path.join(d, "cuda_bf16.h")):
            return d
    return None


def compile_nvrtc(lib, src, incs, defines):
    """None when `src` compiles, else NVRTC's log."""
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.nvrtcCompileProgram.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.nvrtcGetProgramLogSize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    lib.nvrtcGetProgramLog.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"unit.cu", 0, None, None)
    assert rc == 0, f"nvrtcCreateProgram: {rc}"
    opts = NVRTC_FLAGS + [f"-I{d}" for d in incs] + [f"-D{d}" for d in defines]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    try:
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if rc == 0:
            return None
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value + 1)
        lib.nvrtcGetProgramLog(prog, log)
        return log.value.decode(errors="replace")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def compile_body(body, first_dir=None):
    """Compile every variant of `body`: {variant: error text} for those that fail. first_dir: a
    folder searched before the kernels folder (a changed copy of a body)."""
    incs = ([first_dir] if first_dir else []) + [PREFIXES, KERNELS]
    host = body.startswith("host_")
    cc = shutil.which(os.environ.get("CC", "cc")) if host else None
    nvcc = None if host else shutil.which("nvcc")
    lib = None
    if host and not cc:
        pytest.skip("no C compiler (cc, or $CC) to check the host bodies with")
    if not host and not nvcc:
        lib = nvrtc_lib()
        if lib is None:
            pytest.skip("neither nvcc nor NVRTC (KFORGE_NVRTC, libnvrtc.so, the nvidia-cuda-nvrtc wheel) "
                        "to check the CUDA bodies with")
    src = unit(body)
    tmp = tempfile.mkdtemp(prefix="kf-body-")

    def one(v):
        define = f"KF_CHECK_VARIANT={v}"
        if lib is not None:
            inc = cuda_include()
            return compile_nvrtc(lib, src, incs + ([inc] if inc else []), [define])
        path = os.path.join(tmp, f"unit{v}." + ("c" if host else "cu"))
        with open(path, "w") as f:
            f.write(src)
        if host:
            cmd = [cc, *HOST_FLAGS, "-fsyntax-only"]
        else:
            cmd = [nvcc, "-std=c++17", "-arch=sm_90", "--ptx", "-o", os.devnull]
        cmd += [f"-I{d}" for d in incs] + [f"-D{define}", path]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        return None if r.returncode == 0 else (r.stdout + r.stderr)

    try:
        n = variants(body)
        with ThreadPoolExecutor(max_workers=max(1, min(n, os.cpu_count() or 1))) as ex:
            logs = list(ex.map(one, range(n)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {v: log for v, log in enumerate(logs) if log is not None}


@pytest.mark.parametrize("body", [b for b in BODIES if os.path.exists(os.path.join(PREFIXES, b + ".h"))])
def test_body_compiles(body):
    failed = compile_body(body)
    assert not failed, "\n".join(f"{body}, variant {v} (tests/template_bodies/{body}.h):\n{log}"
                                 for v, log in failed.items())


@pytest.mark.parametrize("body", ["host_softmax.c", "cuda_softmax.cu"])
def test_a_broken_body_fails(body, tmp_path):
    """The check sees a syntax error: the same body with a broken declaration first (outside any
    #if: every variant compiles it) fails, in every variant."""
    with open(os.path.join(KERNELS, body)) as f:
        text = f.read()
    (tmp_path / body).write_text("static const int kf_broken = ;\n" + text)
    failed = compile_body(body, first_dir=str(tmp_path))
    assert set(failed) == set(range(variants(body))), failed
