"""The guard path is real: a kernel registered through the C API for a signature serves exactly
that signature; everything else, and any refusal, goes to the original kernel."""

import ctypes
import os
import subprocess

import pytest
import torch

import kernel_forge as kf

from conftest import ROOT


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    out = tmp_path_factory.mktemp("k") / "host_kernels.so"
    src = os.path.join(ROOT, "tests", "python", "fixtures", "host_kernels.c")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-I",
                    os.path.join(ROOT, "include"), src, "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


def addr(lib, name):
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


def row(key):
    return next(r for r in kf.stats() if r["key"] == key)


@pytest.fixture(autouse=True)
def enabled():
    kf.enable()
    yield
    kf.enable()


def test_registered_kernel_serves_exact_signature_only(kernels):
    x = torch.randn(37, 19)
    key = kf.signature_key("aten::relu", x)
    counter = ctypes.c_int64(0)
    kf._register_kernel(key, addr(kernels, "kf_test_relu_f32"), ctypes.addressof(counter))
    try:
        before = row(key)
        y = torch.relu(x)
        assert counter.value == 1
        assert torch.equal(y, torch.clamp_min(x, 0))
        assert y.shape == x.shape and y.stride() == x.stride() and y.dtype == x.dtype
        after = row(key)
        assert after["served"] == before["served"] + 1
        assert after["fallback"] == before["fallback"]
        assert after["has_kernel"]
        # another shape, a transposed view and another dtype are other signatures: eager
        torch.relu(torch.randn(37, 20))
        torch.relu(torch.randn(19, 37).t())
        torch.relu(x.double())
        assert counter.value == 1
        # disabled: straight to the original kernel
        kf.disable()
        torch.relu(x)
        assert counter.value == 1
    finally:
        kf._register_kernel(key, 0)
    torch.relu(x)
    assert counter.value == 1


def test_inplace_kernel_writes_into_self(kernels):
    x = torch.randn(64, 8)
    key = kf.signature_key("aten::relu_", x.clone())
    counter = ctypes.c_int64(0)
    kf._register_kernel(key, addr(kernels, "kf_test_relu_inplace_f32"), ctypes.addressof(counter))
    try:
        expect = x.clamp_min(0)
        y = x.relu_()
        assert counter.value == 1
        assert y.data_ptr() == x.data_ptr()
        assert torch.equal(x, expect)
    finally:
        kf._register_kernel(key, 0)


def test_inplace_kernel_never_writes_over_a_partly_overlapping_argument(kernels):
    base = torch.randn(9, 16)
    x, other = torch.randn(8, 16), torch.randn(8, 16)
    key = kf.signature_key("aten::add_.Tensor", x.clone(), other)
    counter = ctypes.c_int64(0)
    kf._register_kernel(key, addr(kernels, "kf_test_add_inplace_f32"), ctypes.addressof(counter))
    try:
        expect = x + other
        x.add_(other)  # separate memory: served
        assert counter.value == 1 and torch.equal(x, expect)
        expect = x + x
        x.add_(x)  # the very same view: served
        assert counter.value == 2 and torch.equal(x, expect)
        # rows 1..8 += rows 0..7 of one buffer: the same signature, but eager refuses it
        calls = row(key)["calls"]
        with pytest.raises(RuntimeError, match="single memory location"):
            torch.Tensor.add_(base[1:], base[:-1])
        assert row(key)["calls"] == calls + 1 and counter.value == 2
    finally:
        kf._register_kernel(key, 0)


def test_refusing_kernel_falls_back_to_eager(kernels):
    x = torch.randn(5, 3)
    key = kf.signature_key("aten::relu", x)
    counter = ctypes.c_int64(0)
    kf._register_kernel(key, addr(kernels, "kf_test_refuse"), ctypes.addressof(counter))
    try:
        before = row(key)
        y = torch.relu(x)
        assert counter.value == 1
        assert torch.equal(y, torch.clamp_min(x, 0))
        after = row(key)
        assert after["served"] == before["served"]
        assert after["fallback"] == before["fallback"] + 1
    finally:
        kf._register_kernel(key, 0)


def test_register_unknown_key_is_a_clear_error():
    with pytest.raises(kf.KernelForgeError, match="not found.*0123456789abcdef"):
        kf._register_kernel("0123456789abcdef", 1)


def test_signature_key_of_an_op_outside_the_list_is_a_clear_error():
    with pytest.raises(kf.KernelForgeError, match="aten::atan was not intercepted"):
        kf.signature_key("aten::atan", torch.randn(3))


def test_out_variant_that_eager_resized_is_never_served(kernels):
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    out = torch.empty(0)
    key = kf.signature_key("aten::add.out", a, b, out=out)
    assert out.shape == (4, 4)  # eager resized it
    with pytest.raises(kf.KernelForgeError, match="out= tensor that eager resized"):
        kf._register_kernel(key, addr(kernels, "kf_test_refuse"))


def test_unservable_signature_is_refused(kernels):
    # more tensors than a kernel takes: recorded, never served
    parts = [torch.randn(2) for _ in range(17)]
    key = kf.signature_key("aten::cat", parts)
    kf._register_kernel(key, 0)  # detaching is always allowed
    with pytest.raises(kf.KernelForgeError, match="cannot take"):
        kf._register_kernel(key, addr(kernels, "kf_test_refuse"))
    row = next(r for r in kf.stats() if r["key"] == key)
    assert row["servable"] is False


def test_kernel_slower_than_eager_here_stops_being_served(kernels):
    """The speed guard: a kernel whose fastest served call is slower than eager's fastest stops
    being served in this process (never slower than eager), and stats() says why."""
    x = torch.randn(41, 23)
    key = kf.signature_key("aten::relu", x)
    for _ in range(40):  # eager samples: the first 3 calls and one in KFORGE_SAMPLE_EVERY
        torch.relu(x)
    spin = ctypes.c_int64(300)  # ~0.3 ms of busy work per call, far slower than eager's relu
    kf._register_kernel(key, addr(kernels, "kf_test_relu_slow_f32"), ctypes.addressof(spin))
    try:
        for _ in range(16 * (16 + 2)):
            assert torch.equal(torch.relu(x), torch.clamp_min(x, 0))
        r = row(key)
        assert r["served_slower"] and not r["has_kernel"]
        served = r["served"]
        torch.relu(x)
        assert row(key)["served"] == served  # eager from now on
    finally:
        kf._register_kernel(key, 0)
