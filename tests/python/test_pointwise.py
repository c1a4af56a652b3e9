"""The pointwise engine (forge/templates/pointwise_ops.c) end to end: its ops are intercepted, and
kf.tune() finds a kernel rendered from the table (host_pointwise on CPU, cuda_pointwise on a GPU)
that the worker verifies against eager, inserts and this process serves, matching eager.

Bit-identity of every engine op when nothing is served (NaN/Inf, zero-size, broadcasting,
promotion, int and bool, errors) is test_bit_identical.py's, over pointwise_cases.py; the
renders against an independent reference are tests/c/test_templates_pointwise.c's.

The tunes insert with margin=-100 (any verified kernel): on a shared 2-core runner the timings
cannot decide "faster", and correctness and serving are the point here. They run with one thread
(torch's and the worker's OpenMP): on an oversubscribed machine a parallel region waits for its
descheduled threads, and every timing (eager's, the copy roofline's, the candidates') becomes a
scheduler quantum."""

import json
import os
import re

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs

from conftest import ROOT


def table_ops():
    with open(os.path.join(ROOT, "forge", "templates", "pointwise_ops.c")) as f:
        return sorted(set(re.findall(r'\{"(aten::[^"]+)"', f.read())))


def test_engine_ops_are_intercepted_on_cpu():
    ops = table_ops()
    assert len(ops) >= 60, ops
    cpu = {o["op"] for o in kf.ops_info()["ops"] if "CPU" in o["keys"].split(",")}
    missing = sorted(set(ops) - cpu)
    assert not missing, f"engine ops not intercepted on CPU: {missing}"


# Shapes no other test uses: a served kernel must not leak into other tests.
def _rsqrt(dev):
    return "aten::rsqrt", (torch.rand(257, 1031, device=dev) + 0.1,), {}


def _where(dev):
    return "aten::where.self", (torch.rand(257, 1033, device=dev) > 0.5,
                                torch.randn(257, 1033, device=dev),
                                torch.randn(1033, device=dev)), {}


def _masked_fill(dev):  # a Scalar argument compiled in: HF's finfo.min (a job cannot take -inf)
    return "aten::masked_fill.Scalar", (torch.randn(4, 63, 129, device=dev),
                                        torch.rand(63, 129, device=dev) > 0.7,
                                        torch.finfo(torch.float32).min), {}


def _add_scalar(dev):  # a Python number in an operand's place ("other"), alpha, a strided input
    # (read every other element: never faster than a copy, which the worker would distrust)
    return "aten::add.Scalar", (torch.randn(257, 1034, device=dev)[:, ::2], 0.1), {"alpha": 3}


def _softplus(dev):  # Scalar arguments compiled in
    return "aten::softplus", (torch.randn(257, 515, device=dev) * 4,), {"beta": 2.0,
                                                                       "threshold": 5.0}


def _sub_int(dev):  # integers, broadcast
    return "aten::sub.Tensor", (torch.randint(-99, 99, (257, 517), dtype=torch.int32, device=dev).t().contiguous().t(),
                                torch.randint(-99, 99, (517,), dtype=torch.int32, device=dev)), \
        {"alpha": 2}


def _to_copy(dev):  # .float() of a bf16 tensor: a functional cast, the dtype argument compiled in
    return "aten::_to_copy", (torch.randn(257, 1035, device=dev).bfloat16(),), {"dtype": torch.float32}


def _to_copy_device(dev):  # softmax(x, dtype=float32) casts with layout and the tensor's device
    x = torch.randn(257, 1035, device=dev).bfloat16()
    return "aten::_to_copy", (x,), {"dtype": torch.float32, "layout": torch.strided,
                                    "device": x.device if dev == "cpu" else torch.device(dev, 0)}


def _pow3_bf16(dev):  # GPT-2's tanh GELU: eager rounds x * x to bfloat16 before the third factor
    return "aten::pow.Tensor_Scalar", (torch.randn(257, 1037, device=dev).bfloat16(), 3), {}


def _pow_m2_bf16(dev):
    return "aten::pow.Tensor_Scalar", (torch.randn(257, 1039, device=dev).bfloat16() + 4, -2), {}


def _mul_scalar_bf16(dev):  # eager multiplies by the Python number unnarrowed (0.044715f)
    return "aten::mul.Tensor", (torch.randn(257, 1041, device=dev).bfloat16() * 100, 0.044715), {}


def _div_scalar_f16(dev):
    return "aten::div.Tensor", (torch.randn(257, 1043, device=dev).half() * 100, 0.3), {}


def _add_scalar_bf16(dev):  # while add narrows it to bfloat16 first (0.30078125) on the CPU, not on CUDA
    return "aten::add.Tensor", (torch.randn(257, 1045, device=dev).bfloat16(), 0.3), {}


def _sub_scalar_f16(dev):  # sub: the CPU narrows the number to float16 (0.300048828125), CUDA not
    return "aten::sub.Tensor", (torch.randn(257, 1049, device=dev).half(), 0.3), {"alpha": 2}


def _div_scalar_f32(dev):  # CUDA: x * (1 / 0.3f), one ulp from x / 0.3f for some elements
    return "aten::div.Tensor", (torch.randn(257, 1051, device=dev) * 100, 0.3), {}


def _gt_scalar_bf16(dev):  # comparisons narrow the number to bfloat16 on both devices
    # few rows: on 270K elements the host kernel is a genuine 8-9x eager's (ATen's CPU compare
    # loop is slow), so a noisy eager sample made it "more than 10x: too fast to trust"
    return "aten::gt.Scalar", (torch.randn(4, 1053, device=dev).bfloat16() / 8, 0.1), {}


def _mul_0dim_bf16(dev):  # a 0-dim float32 tensor as `other`: eager reads it unnarrowed too
    return "aten::mul.Tensor", (torch.randn(257, 1047, device=dev).bfloat16() * 100,
                                torch.tensor(0.044715, device=dev)), {}


CASES = {"mul_scalar_bf16": (_mul_scalar_bf16, True), "div_scalar_f16": (_div_scalar_f16, True),
         "add_scalar_bf16": (_add_scalar_bf16, True), "mul_0dim_bf16": (_mul_0dim_bf16, True),
         "sub_scalar_f16": (_sub_scalar_f16, True), "div_scalar_f32": (_div_scalar_f32, True),
         "gt_scalar_bf16": (_gt_scalar_bf16, True),
         "pow3_bf16": (_pow3_bf16, True), "pow_m2_bf16": (_pow_m2_bf16, True), "to_copy": (_to_copy, True), "to_copy_device": (_to_copy_device, True), "rsqrt": (_rsqrt, False), "where": (_where, True), "masked_fill": (_masked_fill, True),
         "add_scalar": (_add_scalar, False), "softplus": (_softplus, False), "sub_int": (_sub_int, True)}


@pytest.fixture
def one_thread(monkeypatch):
    n = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the worker's kernels
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def tune_and_serve(case, dev, template):
    make, exact = CASES[case]
    torch.manual_seed(0)
    op, args, kwargs = make(dev)
    fn = _jobs.resolve(op)
    with _jobs.bypass():
        expect = fn(*args, **kwargs)
    res = kf.tune(op, args, iterations=3, kwargs=kwargs, margin=-100, random_inputs=2)
    assert res["status"] == "inserted", res
    assert res["served"], "the inserted kernel is served in this process"
    with open(os.path.join(res["job_dir"], "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    starts = tuple("start: " + t for t in template.split("|"))
    assert nodes and all(n["change"].startswith(starts) or n["parent"] is not None
                         for n in nodes), [n["change"] for n in nodes]
    verified = [n for n in nodes if n["status"] in ("verified", "slower", "flagged")]
    assert verified, [(n["status"], n.get("error")) for n in nodes]
    got = fn(*args, **kwargs)  # through the plugin: the kernel
    assert got.dtype == expect.dtype and got.shape == expect.shape
    if exact:
        assert torch.equal(got, expect)
    else:
        torch.testing.assert_close(got, expect, atol=1e-5, rtol=1e-5)
    row = next(r for r in kf.stats() if r["key"] == kf.signature_key(op, *args, **kwargs))
    assert row["served"] > 0, row


@pytest.mark.parametrize("case", list(CASES))
def test_tune_finds_and_serves_an_engine_kernel(case, one_thread):
    tune_and_serve(case, "cpu", "host_pointwise")


@pytest.mark.gpu
# host-only: the 0-dim rule (a CUDA 0-dim tensor is not a CPU scalar to eager's CUDA kernels)
@pytest.mark.parametrize("case", [c for c in CASES if c != "mul_0dim_bf16"])
def test_tune_finds_and_serves_an_engine_kernel_cuda(case):
    # pow on f16 / bf16 also has the older hand-written template
    tune_and_serve(case, "cuda", "cuda_pointwise|cuda_eltwise" if case.startswith("pow") else "cuda_pointwise")
