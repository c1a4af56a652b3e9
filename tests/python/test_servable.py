"""The servable rule (common/signature.c): a call is served only when a kernel can take every
argument exactly, on the call's one device. Tensors on another device than the call's (a CPU
scalar in a CUDA call, cuda:1 in a cuda:0 copy_) are recorded but never served, never tuned, and
the stats say why, naming the argument; a Python number wrapped into a tensor is servable (its
value is compiled in: test_wrapped_scalars.py). Also: the plugin copies no tuning capture inside
a CUDA-graph capture."""

import pytest
import torch

import kernel_forge as kf
from kernel_forge import KernelForgeError, _jobs, _tuner


def row_of(key):
    return next(r for r in kf.stats() if r["key"] == key)


def test_wrapped_python_number_is_servable():
    x = torch.randn(8)
    key = kf.signature_key("aten::mul.Tensor", x, 2.0)
    row = row_of(key)
    assert row["signature"] == "mul.Tensor(f32[8], other=2.0 (wrapped f64))"
    assert row["servable"] is True and "unservable_reason" not in row, row
    # the plain two-tensor product stays servable, and is another signature
    other = kf.signature_key("aten::mul.Tensor", x, torch.randn(8))
    assert other != key and row_of(other)["servable"] is True
    # and the wrapped call still computes eager's result
    assert torch.equal(x * 2.0, x.double().mul(2.0).float())


@pytest.mark.gpu
def test_cuda_call_with_a_cpu_scalar_is_not_servable_a_python_number_is():
    x = torch.randn(8, device="cuda")
    row = row_of(kf.signature_key("aten::mul.Tensor", x, 2.0))
    assert row["servable"] is True and row["device"] == "cuda:0", row
    row = row_of(kf.signature_key("aten::mul.Tensor", x, torch.tensor(2.0)))
    assert row["device"] == "cuda:0" and row["servable"] is False, row
    assert row["unservable_reason"].startswith("argument 'other' is on cpu:0, the call on cuda:0")


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_cross_gpu_copy_is_not_servable_nor_tunable():
    y0 = torch.empty(1024, device="cuda:0")
    x1 = torch.randn(1024, device="cuda:1")
    key = kf.signature_key("aten::copy_", y0, x1)
    row = row_of(key)
    assert row["device"] == "cuda:0" and row["servable"] is False, row
    assert row["unservable_reason"].startswith("argument 'src' is on cuda:1, the call on cuda:0")
    with pytest.raises(KernelForgeError, match="not servable"):
        kf.tune("aten::copy_", (y0, x1), iterations=1, insert=False)
    # eager's copy, with its cross-device synchronization, still does the work
    y0.copy_(x1)
    assert torch.equal(y0.cpu(), x1.cpu())
    # the same copy within one GPU is servable, and a signature of its own
    x0 = torch.randn(1024, device="cuda:0")
    key0 = kf.signature_key("aten::copy_", y0, x0)
    assert key0 != key and row_of(key0)["servable"] is True


@pytest.mark.gpu
def test_no_tuning_capture_inside_cuda_graph_capture():
    x = torch.randn(64, 33, device="cuda")
    key = kf.signature_key("aten::_softmax", x, -1, False)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up, as torch asks before a capture; past the calls the
        for _ in range(4):      # plugin times (the first 3), which asked the current stream
            torch.softmax(x, -1)
    torch.cuda.current_stream().wait_stream(s)
    _tuner.take_captures(key, 1)  # nothing left from before
    _tuner.request_captures(key, 1)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # torch captures on a side stream, not the legacy one
        y = torch.softmax(x, -1)
    assert _tuner.take_captures(key, 1) == []
    g.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.softmax(x, -1))
    # outside a capture a copy is taken, with the real values
    _tuner.request_captures(key, 1)
    torch.softmax(x, -1)
    caps = _tuner.take_captures(key, 1)
    assert len(caps) == 1 and torch.equal(caps[0][0], x)


def test_job_check_compares_device_indices():
    info = {"signature": "copy_(...)", "device": "cuda", "device_index": 0, "servable": True,
            "outputs": [{"alias_arg": 0}]}
    t = {"kind": "tensor", "dtype": "f32", "sizes": [4], "strides": [1], "align": 16,
         "device": "cuda"}
    args = {"args": [dict(t, name="self", device_index=0), dict(t, name="src", device_index=1),
                     {"kind": "b", "name": "non_blocking", "value": False}]}
    with pytest.raises(_jobs.NotTunable, match="'src' is on cuda:1, the call on cuda:0"):
        _jobs.check_tunable(info, args)
