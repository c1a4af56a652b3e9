"""Python numbers where the schema has a Tensor (`x + 1e-6` is add.Tensor(x, other=<the number
wrapped into a 0-dim CPU tensor>)): the number is part of the signature, exactly (dtype kind and
bit pattern), printed by name in stats(); such a signature is servable, the kernel gets only the
real tensors (the number is compiled in), jobs carry it as a scalar under its schema name, and
every eager replay passes the Python number again so that eager promotes dtypes as the user's
call did. A real 0-dim tensor is not a number: it stays a tensor argument (unservable next to
CUDA tensors)."""

import json
import os

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs, _tuner

from conftest import check_job_cases


def rows_of(op):
    return [r for r in kf.stats() if r["op"] == op]


def row_of(key):
    return next(r for r in kf.stats() if r["key"] == key)


def row_called(op, sig):
    """The stats row of `op` whose signature text is `sig`."""
    found = [r for r in rows_of(op) if r["signature"] == sig]
    assert len(found) == 1, [r["signature"] for r in rows_of(op)]
    return found[0]


def eager(fn):
    with _jobs.bypass():
        return fn()


# ---- the signature ------------------------------------------------------------------------------

def test_stats_rows_show_the_number_and_are_servable():
    x = torch.randn(7, 19)  # a shape no other test uses
    calls = [
        (lambda: x + 1e-6, "aten::add.Tensor", "add.Tensor(f32[7,19], other=1e-06 (wrapped f64), alpha=1)"),
        (lambda: x * 0.5, "aten::mul.Tensor", "mul.Tensor(f32[7,19], other=0.5 (wrapped f64))"),
        (lambda: 2.0 * x, "aten::mul.Tensor", "mul.Tensor(f32[7,19], other=2.0 (wrapped f64))"),
        (lambda: x + 1, "aten::add.Tensor", "add.Tensor(f32[7,19], other=1 (wrapped i64), alpha=1)"),
        (lambda: x + True, "aten::add.Tensor",
         "add.Tensor(f32[7,19], other=True (wrapped bool), alpha=1)"),
    ]
    for fn, op, sig in calls:
        got = fn()
        assert torch.equal(got, eager(fn)) and got.dtype == eager(fn).dtype  # not served: eager's
        r = row_called(op, sig)
        assert r["servable"] is True and "unservable_reason" not in r, r
        assert r["device"] == "cpu"
    # torch.ops wraps a Python number as the operator does: the same signature
    key = kf.signature_key("aten::mul.Tensor", x, 0.5)
    assert row_of(key)["signature"] == "mul.Tensor(f32[7,19], other=0.5 (wrapped f64))"
    # the decoded arguments: the number, its dtype and the job scalar kind it becomes
    _, args = _jobs.describe(key)
    other = args["args"][1]
    assert other == {"name": "other", "kind": "wrapped", "dtype": "f64", "scalar": "d",
                     "value": 0.5}, other


def test_the_number_is_exact():
    x = torch.randn(5, 23)
    keys = [kf.signature_key("aten::add.Tensor", x, v) for v in (1e-6, 2e-6, 1.0, 1, True)]
    assert len(set(keys)) == 5, keys  # 1.0 (f64), 1 (i64) and True (bool) differ too
    # the bit pattern: one ulp apart is another signature
    import math
    assert kf.signature_key("aten::mul.Tensor", x, 0.1) != \
        kf.signature_key("aten::mul.Tensor", x, math.nextafter(0.1, 1.0))


def test_a_real_zero_dim_tensor_is_a_tensor_argument():
    x = torch.randn(3, 29)
    s = torch.tensor(1e-6, dtype=torch.float64)
    key = kf.signature_key("aten::add.Tensor", x, s)
    assert key != kf.signature_key("aten::add.Tensor", x, 1e-6)
    r = row_of(key)
    assert r["signature"] == "add.Tensor(f32[3,29], f64[], alpha=1)", r
    _, args = _jobs.describe(key)
    assert args["args"][1]["kind"] == "tensor"
    # and eager treats it as a tensor: f32 + 0-dim f64 stays f32, int + 0-dim f64 is f64 (a
    # Python float gives float32 there)
    i = torch.arange(6)
    assert (i + s).dtype == torch.float64 and (i + 2.5).dtype == torch.float32


def test_eager_results_unchanged_also_where_dtypes_promote():
    """Not served (no kernel): every call returns eager's result, bit for bit, in eager's dtype."""
    torch.manual_seed(0)
    b = torch.randn(4, 31).bfloat16()
    i = torch.randint(-5, 5, (4, 31))
    f = torch.randn(4, 31)
    cases = [lambda: b + 0.1, lambda: b * 0.3, lambda: i + 2.5, lambda: i + 1, lambda: i * True,
             lambda: f + True, lambda: f / 3.0, lambda: f - 1e-3, lambda: 1 - f, lambda: b.add(1e-6, alpha=2)]
    for fn in cases:
        got, want = fn(), eager(fn)
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert (b + 0.1).dtype == torch.bfloat16 and (i + 2.5).dtype == torch.float32


# ---- jobs ---------------------------------------------------------------------------------------

def test_jobs_carry_the_number_as_a_scalar_and_replay_it_as_a_number(tmp_path):
    torch.manual_seed(0)
    for name, (op, args, out_dtype) in {
        "f32": ("aten::add.Tensor", (torch.randn(6, 37), 1e-6), "f32"),
        "bf16": ("aten::mul.Tensor", (torch.randn(6, 37).bfloat16(), 0.1), "bf16"),
        # an int tensor + a Python float is float32 (a 0-dim f64 tensor would make it f64)
        "int": ("aten::add.Tensor", (torch.randint(-9, 9, (6, 37)), 2.5), "f32"),
        "bool": ("aten::mul.Tensor", (torch.randn(6, 37), True), "f32"),
    }.items():
        d = tmp_path / name
        key = kf.signature_key(op, *args)
        with _jobs.bypass():
            job = _jobs.write_job(str(d), key, [(list(args), {})], recorded=[False], bench_reps=2)
        assert len(job["inputs"]) == 1 and job["inputs"][0]["name"] == "self"  # not in inputs
        other = next(s for s in job["scalars"] if s["name"] == "other")
        kind = {float: "d", int: "i", bool: "b"}[type(args[1])]
        assert other == {"name": "other", "kind": kind, "value": args[1], "wrapped": True}
        with open(d / "job.json") as f:  # the file says the same, exactly
            assert next(s for s in json.load(f)["scalars"] if s["name"] == "other")["value"] == args[1]
        assert job["outputs"][0]["dtype"] == out_dtype
        # every case's outputs are eager's on its inputs with the Python number passed again
        check_job_cases(str(d), args)


def test_captured_calls_hold_the_real_tensors_only(tmp_path):
    x = torch.randn(9, 41)
    key = kf.signature_key("aten::mul.Tensor", x, 0.25)
    n = _tuner.n_tensor_args(key)
    assert n == 1
    _tuner.request_captures(key, 2)
    for _ in range(2):
        x * 0.25
    caps = _tuner.take_captures(key, n)
    assert len(caps) == 2 and all(len(c) == 1 and torch.equal(c[0], x) for c in caps)
    os.environ["KFORGE_JOBS_DIR"] = str(tmp_path)
    try:
        with _jobs.bypass():
            d = _tuner.write_job_from_captures(key, caps, {"iterations": 1})
    finally:
        del os.environ["KFORGE_JOBS_DIR"]
    with open(os.path.join(d, "job.json")) as f:
        job = json.load(f)
    assert [c["kind"] for c in job["cases"]][:2] == ["recorded", "recorded"]
    assert {"name": "other", "kind": "d", "value": 0.25, "wrapped": True} in job["scalars"]
    check_job_cases(d, (x, 0.25))


def test_a_non_finite_number_is_servable_but_not_tunable():
    x = torch.randn(3, 43)
    key = kf.signature_key("aten::mul.Tensor", x, float("inf"))
    assert row_of(key)["servable"] is True
    assert row_of(key)["signature"] == "mul.Tensor(f32[3,43], other=inf (wrapped f64))"
    with pytest.raises(kf.KernelForgeError, match="argument 'other' is inf"):
        kf.tune("aten::mul.Tensor", (x, float("inf")), iterations=1, insert=False)


# ---- serving ------------------------------------------------------------------------------------

@pytest.fixture
def no_roofline(monkeypatch):
    """Copy bandwidth unknown (job.json's 0): on a loaded 2-core machine the host copy probe can
    read a fraction of the real bandwidth, and a kernel at copy speed is then "faster than the
    roofline", flagged and never inserted. These tests are about correctness and serving."""
    monkeypatch.setattr(_jobs, "copy_bandwidth_gbs", lambda device, nbytes: 0.0)


def tune_and_check(op, x, number, call, iterations=6):
    """tune() on op(x, number) on the host backend: a kernel found, inserted, served for the
    operator call, bit-identical to eager."""
    want = eager(call)
    res = kf.tune(op, (x, number), iterations=iterations, margin=-100)  # correctness, not speed
    assert res["status"] == "inserted", res
    assert res["served"], res
    with open(os.path.join(res["job_dir"], "job.json")) as f:
        job = json.load(f)
    assert len(job["inputs"]) == 1
    key = kf.signature_key(op, x, number)
    before = row_of(key)["served"]
    got = call()
    assert row_of(key)["served"] == before + 1  # the operator's call, served
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert got.device == x.device
    return key


def test_tune_add_eps_serves_a_kernel_that_matches_eager(no_roofline):
    torch.manual_seed(1)
    x = torch.randn(256, 1031)
    key = tune_and_check("aten::add.Tensor", x, 1e-6, lambda: x + 1e-6)
    # 2e-6 is another signature: not served, eager's result
    other = kf.signature_key("aten::add.Tensor", x, 2e-6)
    assert other != key
    y = x + 2e-6
    assert row_of(other)["served"] == 0 and torch.equal(y, eager(lambda: x + 2e-6))
    # new inputs of the same signature: still eager's values
    z = torch.randn(256, 1031)
    assert torch.equal(z + 1e-6, eager(lambda: z + 1e-6))


def test_tune_mul_half_serves_a_kernel_that_matches_eager(no_roofline):
    torch.manual_seed(2)
    x = torch.randn(128, 1033)
    tune_and_check("aten::mul.Tensor", x, 0.5, lambda: x * 0.5)
    z = torch.randn(128, 1033)
    assert torch.equal(z * 0.5, eager(lambda: z * 0.5))
    # x * 0.5 and 0.5 * x are one signature (torch calls mul(x, 0.5) for both)
    assert torch.equal(0.5 * z, eager(lambda: z * 0.5))


def test_promoting_calls_are_never_served_wrong():
    """A bf16 tensor + float, or an int tensor + 2.5 (float32 out): host_eltwise_binary is for
    float32 only and refuses them; whatever template serves them (a later one may), the served
    result is eager's, in eager's dtype."""
    torch.manual_seed(3)
    b = torch.randn(64, 1037).bfloat16()
    i = torch.randint(-9, 9, (64, 1037))
    for x, number in ((b, 0.1), (i, 2.5)):
        res = kf.tune("aten::add.Tensor", (x, number), iterations=2, margin=-100)
        assert res["status"] in ("no_template", "inserted", "no_faster_kernel",
                                 "no_correct_kernel"), res
        got, want = x + number, eager(lambda: x + number)
        assert got.dtype == want.dtype
        atol, rtol = _jobs.tolerance("aten::add.Tensor", want.dtype)
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol)


HOST_ADD = """
#define N {n}L
void kf_kernel(const float *x, float *y) {{
    for (long i = 0; i < N; i++) y[i] = x[i] + {c}f;
}}"""
LAUNCH = {"entry": "kf_kernel", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
          "args": ["const float*", "float*"]}


def test_add_kernel_takes_the_real_tensors_and_checks_against_eager_with_the_number():
    x = torch.randn(11, 47)
    # a hand-written kernel with the number compiled in: verified (eager replayed with 0.25)
    res = kf.add_kernel("aten::add.Tensor", (x, 0.25), HOST_ADD.format(n=x.numel(), c="0.25"),
                        LAUNCH, allow_slower=True)
    assert res["status"] == "ok" and res["signature"].endswith("other=0.25 (wrapped f64), alpha=1)")
    got = x + 0.25
    assert torch.equal(got, eager(lambda: x + 0.25))
    assert row_of(res["signature_key"])["served"] >= 1
    # one that compiles in another number is wrong against eager's replay, and refused
    y = torch.randn(13, 47)
    with pytest.raises(kf.KernelForgeError) as e:
        kf.add_kernel("aten::add.Tensor", (y, 0.5), HOST_ADD.format(n=y.numel(), c="0.25"),
                      LAUNCH, allow_slower=True)
    assert e.value.status == "wrong", e.value


# ---- CUDA (run on a GPU machine) ----------------------------------------------------------------

@pytest.mark.gpu
def test_cuda_number_is_servable_a_cpu_zero_dim_tensor_is_not():
    x = torch.randn(8, 53, device="cuda")
    r = row_of(kf.signature_key("aten::mul.Tensor", x, 2.0))
    assert r["servable"] is True and r["device"] == "cuda:0", r
    r = row_of(kf.signature_key("aten::mul.Tensor", x, torch.tensor(2.0)))
    assert r["servable"] is False
    assert r["unservable_reason"].startswith("argument 'other' is on cpu:0, the call on cuda:0")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cuda_tune_serves_numbers_as_eager_computes_them(dtype):
    torch.manual_seed(4)
    x = torch.randn(512, 2053, device="cuda").to(dtype)
    for op, number, call in (("aten::add.Tensor", 1e-3, lambda: x + 1e-3),
                             ("aten::mul.Tensor", 0.1, lambda: x * 0.1)):
        want = eager(call)
        res = kf.tune(op, (x, number), iterations=8, margin=-100)
        assert res["status"] == "inserted" and res["served"], res
        got = call()
        assert got.device == x.device and got.dtype == want.dtype
        assert torch.equal(got, want), (got - want).abs().max()


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_cuda_output_is_on_the_real_tensors_device():
    x = torch.randn(64, 2063, device="cuda:1")
    res = kf.tune("aten::mul.Tensor", (x, 0.5), iterations=4, margin=-100)
    assert res["status"] == "inserted" and res["served"], res
    with torch.cuda.device(0):  # the current device is not the tensor's
        got = x * 0.5
    assert got.device == x.device and torch.equal(got, eager(lambda: x * 0.5))
