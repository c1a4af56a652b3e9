"""CUDA behaviour of the plugin (run on the H200 through the device tool; skipped without a GPU)."""

import contextlib
import ctypes
import os
import shutil
import subprocess
import time

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs

from conftest import ROOT, check_job_cases, span_of

pytestmark = pytest.mark.gpu


def test_ops_are_intercepted_on_cuda():
    info = {o["op"]: o for o in kf.ops_info()["ops"]}
    for op in ["aten::_softmax", "aten::native_layer_norm", "aten::native_group_norm", "aten::gelu",
               "aten::add.Tensor", "aten::native_batch_norm", "aten::clamp_min_", "aten::copy_"]:
        assert "CUDA" in info[op]["keys"].split(","), (op, info[op])


def test_cuda_rows_are_timed_with_events():
    kf.reset_stats()
    x = torch.randn(4096, 4096, device="cuda")
    for _ in range(40):
        y = torch.softmax(x, -1)
    torch.cuda.synchronize()
    rows = [r for r in kf.stats() if r["op"] == "aten::_softmax" and r["device"] == "cuda:0"]
    assert len(rows) == 1, rows
    r = rows[0]
    assert r["calls"] == 40 and r["fallback"] == 40
    assert r["time_source"] == "cuda-events"
    assert r["timed_calls"] >= 3
    # 64 MiB read + 64 MiB written: at least ~20 us on any GPU, far more than a launch
    assert 10 < r["eager_us"] < 100000, r
    assert torch.allclose(y.sum(-1), torch.ones(4096, device="cuda"))


def test_side_stream_results_and_timing():
    kf.reset_stats()
    s = torch.cuda.Stream()
    x = torch.randn(1024, 1024, device="cuda")
    with torch.cuda.stream(s):
        for _ in range(8):
            y = torch.nn.functional.gelu(x)
    s.synchronize()
    assert torch.equal(y, torch.nn.functional.gelu(x))
    row = next(r for r in kf.stats() if r["op"] == "aten::gelu" and r["device"] == "cuda:0"
               and "[1024,1024]" in r["signature"])
    assert row["eager_us"] > 0


def test_cuda_graph_capture_and_replay_unchanged():
    x = torch.randn(256, 512, device="cuda")
    w = torch.randn(512, device="cuda")
    def f(inp):
        return torch.softmax(torch.nn.functional.layer_norm(inp, (512,), w) * 2 + 1, -1).relu()
    expect = f(x)
    static_in = x.clone()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(static_in)  # warm-up on a side stream, as torch requires
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out = f(static_in)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, expect)
    static_in.copy_(x * 3)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, f(x * 3))
    kf.stats()  # reading stats after capture must not trip on events


@pytest.fixture(scope="module")
def cuda_kernels(tmp_path_factory):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        pytest.skip("nvcc not found")
    out = tmp_path_factory.mktemp("cu") / "cuda_kernels.so"
    major, minor = torch.cuda.get_device_capability()
    subprocess.run([nvcc, "-O2", "-shared", "-Xcompiler", "-fPIC", f"-arch=sm_{major}{minor}",
                    "-I", os.path.join(ROOT, "include"),
                    os.path.join(ROOT, "tests", "python", "fixtures", "cuda_kernels.cu"),
                    "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


@contextlib.contextmanager
def relu_served(cuda_kernels, x):
    """The fixture's CUDA relu registered for x's signature: (its key, its call counter)."""
    key = kf.signature_key("aten::relu", x)
    counter = ctypes.c_int64(0)
    fn = ctypes.cast(cuda_kernels.kf_test_cuda_relu_f32, ctypes.c_void_p).value
    kf._register_kernel(key, fn, ctypes.addressof(counter))
    try:
        yield key, counter
    finally:
        kf._register_kernel(key, 0)


def test_registered_cuda_kernel_is_served_on_the_current_stream(cuda_kernels):
    x = torch.randn(3000, 77, device="cuda")
    with relu_served(cuda_kernels, x) as (key, counter):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            y = torch.relu(x)
        s.synchronize()
        assert counter.value == 1
        assert y.device == x.device and y.stride() == x.stride()
        assert torch.equal(y, x.clamp_min(0))
        row = next(r for r in kf.stats() if r["key"] == key)
        assert row["served"] == 1


def test_served_outputs_come_from_the_caching_allocator_and_its_pools(cuda_kernels):
    # a served output is allocated without the dispatcher (convert.cpp, empty_output): it must
    # still be the caching allocator's memory, counted, and in the mem pool a user routes to
    x = torch.randn(3000, 77, device="cuda")
    with relu_served(cuda_kernels, x) as (_, counter):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        y = torch.relu(x)
        assert counter.value == 1
        assert torch.cuda.memory_allocated() - before == -(-x.nbytes // 512) * 512
        del y
        assert torch.cuda.memory_allocated() == before
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            z = torch.relu(x)
        assert counter.value == 2 and torch.equal(z, x.clamp_min(0))
        segs = pool.snapshot()
        assert any(s["address"] <= z.data_ptr() < s["address"] + s["total_size"] for s in segs), segs


def test_call_device_is_the_dispatch_keys_not_the_first_tensors():
    kf.reset_stats()
    x = torch.randn(64, 64, device="cuda")
    y = torch.add(torch.tensor(2.0), x)  # a CPU 0-dim tensor first, dispatched to CUDA
    torch.cuda.synchronize()
    (row,) = [r for r in kf.stats() if r["op"] == "aten::add.Tensor"]
    assert torch.equal(y, x + 2.0)
    assert row["device"] == "cuda:0" and row["time_source"] == "cuda-events", row


def test_undescribable_cuda_tensor_is_still_a_cuda_row():
    kf.reset_stats()
    x = torch.randn(*[2] * 9, device="cuda")  # more dims than a signature describes exactly
    assert torch.equal(x + x, 2 * x)
    (row,) = [r for r in kf.stats() if r["op"] == "aten::add.Tensor"]
    assert row["device"] == "cuda:0" and row["servable"] is False, row


def test_hand_written_cuda_kernels_served_in_a_model(tmp_path):
    """add_kernel with NVRTC, serving in a model, a CUDA graph with served kernels (small shapes;
    benchmarks/cache_gpu.py runs the full-size ones)."""
    import subprocess
    import sys

    # the small shapes may lose to eager (added with allow_slower): no eager samples, so that the
    # speed guard (tests/python/test_guard.py) does not stop them between the served run and
    # the graph replay compared with it
    env = dict(os.environ, KFORGE_CACHE_DIR=str(tmp_path / "cache"), KFORGE_EAGER_SAMPLE_EVERY="0")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "cache_gpu.py"), "--quick"],
                       env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "replay equals the served run: True" in p.stdout and p.stdout.rstrip().endswith("OK")


@pytest.mark.parametrize("case", ["softmax_bf16", "layer_norm_f32", "add_broadcast_f16"])
def test_tune_on_cuda_finds_verified_kernels(case):
    """The forge on the GPU: NVRTC candidates from the CUDA templates, verified in the worker's
    evaluator; a winner is served here within tolerance."""
    torch.manual_seed(0)
    dev = "cuda"
    if case == "softmax_bf16":
        x = torch.randn(96, 4000, device=dev, dtype=torch.bfloat16)
        op, args, kw = "aten::_softmax", (x, -1, False), {}
        call = lambda: torch.softmax(x, -1)  # noqa: E731
    elif case == "layer_norm_f32":
        x, w, b = (torch.randn(512, 768, device=dev), torch.randn(768, device=dev),
                   torch.randn(768, device=dev))
        op, args, kw = "aten::native_layer_norm", (x, [768], w, b, 1e-5), {}
        call = lambda: torch.nn.functional.layer_norm(x, [768], w, b, 1e-5)  # noqa: E731
    else:
        x = torch.randn(8, 64, 56, 56, device=dev, dtype=torch.float16)
        y = torch.randn(64, 1, 1, device=dev, dtype=torch.float16)
        op, args, kw = "aten::add.Tensor", (x, y), {}
        call = lambda: x + y  # noqa: E731
    with _jobs.bypass():
        expect = call()
    res = kf.tune(op, args, iterations=8, kwargs=kw)
    assert res["status"] in ("inserted", "no_faster_kernel"), res
    import json
    with open(os.path.join(res["job_dir"], "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    assert any(n["status"] in ("verified", "slower") for n in nodes), nodes
    assert all(n["backend"] == "nvrtc" for n in nodes)
    got = call()
    tol = 1e-2 if expect.dtype == torch.bfloat16 else 1e-3 if expect.dtype == torch.float16 else 1e-4
    torch.testing.assert_close(got, expect, atol=tol, rtol=tol)


CUDA_JOB_CALLS = {
    "f32_strided": lambda: ("aten::mul.Tensor",  # 32 MiB, a slice of each row
                            (torch.randn(64, 1024, 130, device="cuda")[..., :128],
                             torch.randn(64, 1024, 1, device="cuda"))),
    "bool": lambda: ("aten::mul.Tensor", (torch.rand(96, 64, device="cuda") > 0.5,
                                          (torch.rand(64, 96, device="cuda") > 0.5).t())),
    "softmax_masked": lambda: ("aten::_softmax", (torch.randn(64, 300, device="cuda"), -1, False)),
}


@pytest.mark.parametrize("case", sorted(CUDA_JOB_CALLS))
def test_cuda_job_draws_random_inputs_on_the_device(case, tmp_path):
    """write_job on CUDA tensors: the case files are the tensors' spans and eager's outputs; the
    random inputs come from a CUDA generator seeded by the job's seed (the same files again for
    the same seed), not from host randn copied over."""
    torch.manual_seed(0)
    op, args = CUDA_JOB_CALLS[case]()
    key = kf.signature_key(op, *args)

    def write(d):
        t0 = time.perf_counter()
        with _jobs.bypass():
            job = _jobs.write_job(str(d), key, [(list(args), {})], recorded=[False], seed=4)
        print(f"{case}: write_job {time.perf_counter() - t0:.2f} s")
        return job

    job = write(tmp_path / "a")
    check_job_cases(str(tmp_path / "a"), args, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(4)  # variant 0's first tensor draws first
    want = _jobs.random_like(args[0], 0, op, job["inputs"][0]["name"], g)
    assert (tmp_path / "a" / "cases" / "c1_in0.bin").read_bytes() == span_of(want)
    write(tmp_path / "b")
    a, b = ({f.name: f.read_bytes() for f in (tmp_path / d / "cases").iterdir()} for d in "ab")
    assert a == b
    ins = [a[f] for c in job["cases"] for f in c["inputs"]]
    assert len(set(ins)) == len(ins)  # variants differ, and so do a case's tensors
    if "softmax" in op:  # the third variant masks with -inf
        assert torch.isinf(torch.frombuffer(bytearray(a["c3_in0.bin"]), dtype=torch.float32)).any()


@pytest.mark.gpu
def test_host_copies_put_back_with_the_same_layout():
    """The online tuner saves the confirmation's call as host copies (host_exact, through the
    pinned stage in chunks); the child puts them back (device_exact) with the same sizes, strides,
    storage offset and alignment, which the served kernel's signature holds."""
    big = torch.randn(5, 1024, 1030, device="cuda")[1:, :, 3:1027]  # 21 MB storage, offset, gaps
    args = [big, [torch.randn(7, device="cuda").bfloat16()[1:]], 2.5]
    host = _jobs.host_exact(args)
    assert host[0].device.type == "cpu" and host[2] == 2.5
    back = _jobs.device_exact(host, torch.device("cuda"))
    for a, b in ((args[0], back[0]), (args[1][0], back[1][0])):
        assert b.is_cuda and torch.equal(a, b)
        assert (b.stride(), b.storage_offset()) == (a.stride(), a.storage_offset())
        assert b.data_ptr() % 16 == a.data_ptr() % 16
