"""The guards that keep a served kernel from costing the user: the speed guard samples eager on
served signatures and stops a kernel that loses (also when it is served from the first call),
add_kernel refuses a slower kernel, the first-use check's memory is bounded and a check that
cannot run rejects the entry in this process, and a kernel that fails is detached at once."""

import ctypes
import json
import logging
import os
import subprocess

import pytest
import torch

import kernel_forge as kf

from conftest import ROOT, run_python

LAUNCH = {"entry": "kf_kernel", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
          "args": ["const float*", "float*"]}


def relu_source(n: int, spin: int = 0) -> str:
    """relu over n contiguous floats; `spin` passes of volatile busy work first (slow on purpose,
    still exact)."""
    return f"""
#define N {n}L
void kf_kernel(const float *x, float *y) {{
    volatile float sink = 0.f;
    for (long j = 0; j < {spin}L * N; j++) sink += x[j % N];
    for (long i = 0; i < N; i++) y[i] = x[i] < 0.f ? 0.f : x[i];
}}"""


def fresh(code: str, **env):
    """Run `code` in a fresh process serving this session's cache; its last stdout line as JSON."""
    p = run_python(code, env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


ROW = ("def row(key):\n"
       "    return next(r for r in kf.stats() if r['key'] == key)\n")


# ---- item 4: the speed guard --------------------------------------------------------------------

SLOW_SHAPE = (37, 29)


@pytest.fixture(scope="module")
def slow_entry():
    x = torch.randn(*SLOW_SHAPE)
    return kf.add_kernel("aten::relu", (x,), relu_source(x.numel(), spin=200), LAUNCH,
                         random_inputs=1, allow_slower=True)


def test_add_kernel_refuses_a_kernel_slower_than_eager():
    x = torch.randn(31, 17)
    with pytest.raises(kf.KernelForgeError, match=r"slower than eager.*allow_slower=True"):
        kf.add_kernel("aten::relu", (x,), relu_source(x.numel(), spin=200), LAUNCH,
                      random_inputs=1)
    key = kf.signature_key("aten::relu", x)
    assert not any(e["signature"].startswith("relu(f32[31,17]") for e in kf.cache_entries())
    assert not next(r for r in kf.stats() if r["key"] == key)["has_kernel"]


def test_allow_slower_inserts_and_says_so(slow_entry):
    assert slow_entry["cache_key"]
    assert slow_entry["speedup"] < 0.5, slow_entry  # hundreds of passes of busy work per call


def test_slower_entry_served_from_the_first_call_is_stopped_in_a_fresh_process(slow_entry):
    """A cache entry is served from a fresh process's first call, so eager was never timed and
    the guard never fired: eager must be sampled on served signatures too."""
    calls = 600
    code = ("import json, torch, kernel_forge as kf\n" + ROW +
            f"x = torch.randn{SLOW_SHAPE}\n"
            f"ref = x.clamp(min=0)\n"
            f"for _ in range({calls}):\n"
            f"    assert torch.equal(torch.relu(x), ref)\n"
            f"print(json.dumps(row({slow_entry['signature_key']!r})))\n")
    r, _ = fresh(code)
    assert r["calls"] == calls
    assert r["eager_us"] > 0, r  # eager was sampled although the kernel served from call 1
    assert r["served_slower"] and r["stopped"] == "slower" and not r["has_kernel"], r
    assert r["served"] < calls // 4, r  # stopped early, eager from then on
    assert r["served_us"] > 5 * r["eager_us"], r


def test_eager_samples_on_a_served_signature_are_a_small_share(slow_entry):
    """The eager samples cost little: one sampled call in KFORGE_EAGER_SAMPLE_EVERY runs eager,
    every other call is served (here with the guard's decision out of the way: every call timed,
    a kernel registered directly, trusted)."""
    code = ("import ctypes, json, torch, kernel_forge as kf\n" + ROW +
            "lib = ctypes.CDLL(%r)\n"
            "x = torch.randn(23, 5)\n"
            "key = kf.signature_key('aten::relu', x)\n"
            "n = ctypes.c_int64(0)\n"
            "kf._register_kernel(key, ctypes.cast(lib.kf_test_relu_f32, ctypes.c_void_p).value,"
            " ctypes.addressof(n))\n"
            "kf.reset_stats()\n"
            "for _ in range(400):\n"
            "    assert torch.equal(torch.relu(x), x.clamp(min=0))\n"
            "r = row(key)\n"
            "r['kernel_calls'] = n.value\n"
            "print(json.dumps(r))\n") % host_kernels_path()
    r, _ = fresh(code, KFORGE_SAMPLE_EVERY="1", KFORGE_EAGER_SAMPLE_EVERY="8")
    assert r["calls"] == 400 and r["kernel_calls"] == r["served"]
    # every call is timed: one in 8 of them runs eager (the counts, not timing, decide)
    assert 400 // 8 - 2 <= r["fallback"] <= 400 // 8 + 2, r
    assert r["eager_us"] > 0 and r["served_us"] > 0


_host_kernels = None


def host_kernels_path() -> str:
    global _host_kernels
    if _host_kernels is None:
        import tempfile

        out = os.path.join(tempfile.mkdtemp(prefix="kforge-guard-"), "host_kernels.so")
        src = os.path.join(ROOT, "tests", "python", "fixtures", "host_kernels.c")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-I",
                        os.path.join(ROOT, "include"), src, "-o", out], check=True)
        _host_kernels = out
    return _host_kernels


# ---- item 5: the first-use check ----------------------------------------------------------------

BIG = 8 << 20  # 8 Mi floats: a 32 MiB output


def test_first_use_check_memory_is_bounded():
    """The check compared in float64 after converting both outputs whole: ~13x the output's
    memory. Now chunked: beyond eager's and the kernel's outputs, a bounded amount."""
    x = torch.randn(BIG)
    res = kf.add_kernel("aten::relu", (x,), relu_source(BIG), LAUNCH, random_inputs=0,
                        allow_slower=True)
    code = ("import json, torch, kernel_forge as kf\n" + ROW +
            "def kb(field):\n"
            "    return next(int(l.split()[1]) for l in open('/proc/self/status')\n"
            "                if l.startswith(field))\n"
            f"x = torch.randn({BIG})\n"
            "open('/proc/self/clear_refs', 'w').write('5')  # VmHWM := VmRSS\n"
            "base = kb('VmRSS:')\n"
            "y = torch.relu(x)  # first use: checked against eager\n"
            "extra = (kb('VmHWM:') - base) / 1024\n"
            "ok = torch.equal(y, x.clamp(min=0))\n"
            f"r = row({res['signature_key']!r})\n"
            "print(json.dumps({'extra_mib': extra, 'ok': ok, 'row': r}))\n")
    out, _ = fresh(code)
    r = out["row"]
    assert out["ok"] and r["served"] == 1 and r["has_kernel"], out  # checked, passed, kept
    out_mib = BIG * 4 / 2**20
    # eager's output and the kernel's, then a few chunk-sized buffers at most
    assert out["extra_mib"] < 2 * out_mib + 40, out


SMALL_SHAPE = (19, 23)


def test_check_that_cannot_run_rejects_the_entry_in_this_process():
    """A check that fails to run (out of memory, forced here) used to leave the kernel neither
    checked nor rejected: every later call ran kernel, eager and the failing check again."""
    x = torch.randn(*SMALL_SHAPE)
    res = kf.add_kernel("aten::relu", (x,), relu_source(x.numel()), LAUNCH, random_inputs=1,
                        allow_slower=True)
    code = ("import json, torch, kernel_forge as kf\n"
            "from kernel_forge import _native\n" + ROW +
            "_native.lib().kf_fail_next_checks(_native.runtime(), 1)\n"
            f"x = torch.randn{SMALL_SHAPE}\n"
            "ok = all(torch.equal(torch.relu(x), x.clamp(min=0)) for _ in range(10))\n"
            "kf.reload_cache()  # the entry is not attached again\n"
            "ok = ok and all(torch.equal(torch.relu(x), x.clamp(min=0)) for _ in range(10))\n"
            f"r = row({res['signature_key']!r})\n"
            f"e = next(e for e in kf.cache_entries() if e['key'] == {res['cache_key']!r})\n"
            "print(json.dumps({'ok': ok, 'row': r, 'disabled': e['disabled']}))\n")
    out, err = fresh(code)
    r = out["row"]
    assert out["ok"]
    assert r["served"] == 0 and r["fallback"] == 20, out  # never retried
    assert not r["has_kernel"] and r["stopped"] == "check_error", out
    assert not out["disabled"], out  # this process only: another may check it fine
    assert err.count("could not check") == 1, err


# ---- item 6: a kernel that fails ----------------------------------------------------------------

class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_failing_kernel_is_detached_after_its_first_failure_with_one_warning():
    lib = ctypes.CDLL(host_kernels_path())
    x = torch.randn(11, 7)
    key = kf.signature_key("aten::relu", x)
    counter = ctypes.c_int64(0)
    kf._register_kernel(key, ctypes.cast(lib.kf_test_refuse, ctypes.c_void_p).value,
                        ctypes.addressof(counter))
    log = _Records()
    logging.getLogger("kernel_forge").addHandler(log)
    try:
        for _ in range(50):
            assert torch.equal(torch.relu(x), x.clamp(min=0))
        assert counter.value == 1  # the kernel ran once, then eager
        failed = [m for m in log.messages if "returned 7" in m]
        assert len(failed) == 1 and "aten::relu" in failed[0], log.messages
        r = next(r for r in kf.stats() if r["key"] == key)
        assert not r["has_kernel"] and r["stopped"] == "launch_failed", r
    finally:
        logging.getLogger("kernel_forge").removeHandler(log)
        kf._register_kernel(key, 0)


# ---- the same on CUDA (run on the H200: python3 -m pytest -q -m gpu tests/python/test_guard.py) --

CUDA_RELU = r"""
extern "C" __global__ void kf_kernel(const float *x, float *y) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (KF_SPIN > 0) {  /* slow on purpose: busy for KF_SPIN clocks */
        long long t0 = clock64();
        while (clock64() - t0 < KF_SPIN) {
        }
    }
    if (i < KF_N) { float v = x[i]; y[i] = v < 0.f ? 0.f : v; }
}"""


def cuda_relu(n: int, spin: int = 0):
    src = f"#define KF_N {n}LL\n#define KF_SPIN {spin}LL\n" + CUDA_RELU
    launch = {"entry": "kf_kernel", "grid": [(n + 255) // 256, 1, 1], "block": [256, 1, 1],
              "smem": 0, "args": ["const float*", "float*"]}
    return src, launch


@pytest.mark.gpu
def test_first_use_check_device_memory_is_bounded_on_cuda():
    n = 32 << 20  # a 128 MiB output: the float64 check took ~13x that in device memory
    x = torch.randn(n, device="cuda")
    res = kf.add_kernel("aten::relu", (x,), *cuda_relu(n), random_inputs=0, allow_slower=True)
    code = ("import json, torch, kernel_forge as kf\n" + ROW +
            f"x = torch.randn({n}, device='cuda')\n"
            "torch.cuda.synchronize()\n"
            "torch.cuda.reset_peak_memory_stats()\n"
            "base = torch.cuda.memory_allocated()\n"
            "y = torch.relu(x)  # first use: checked against eager\n"
            "torch.cuda.synchronize()\n"
            "extra = (torch.cuda.max_memory_allocated() - base) / 2**20\n"
            "ok = torch.equal(y, x.clamp(min=0))\n"
            f"r = row({res['signature_key']!r})\n"
            "print(json.dumps({'extra_mib': extra, 'ok': ok, 'row': r}))\n")
    out, _ = fresh(code)
    r = out["row"]
    assert out["ok"] and r["served"] == 1 and r["has_kernel"], out
    assert out["extra_mib"] < 2 * n * 4 / 2**20 + 40, out


@pytest.mark.gpu
def test_slower_cuda_entry_served_from_the_first_call_is_stopped_in_a_fresh_process():
    n, calls = 4096, 600
    x = torch.randn(n, device="cuda")
    res = kf.add_kernel("aten::relu", (x,), *cuda_relu(n, spin=1_000_000), random_inputs=1,
                        allow_slower=True)
    code = ("import json, torch, kernel_forge as kf\n" + ROW +
            f"x = torch.randn({n}, device='cuda')\n"
            "ref = x.clamp(min=0)\n"
            f"for _ in range({calls}):\n"
            "    assert torch.equal(torch.relu(x), ref)\n"
            "torch.cuda.synchronize()\n"
            f"print(json.dumps(row({res['signature_key']!r})))\n")
    r, _ = fresh(code)
    assert r["time_source"] == "cuda-events" and r["eager_us"] > 0, r
    assert r["served_slower"] and r["stopped"] == "slower" and not r["has_kernel"], r
    assert r["served"] < calls // 4, r
