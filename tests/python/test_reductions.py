"""The generic reductions and gathers on CPU (host backend): each overload is intercepted on the
CPU key; kf.tune() finds, verifies and serves a kernel for a sum and for a gather (the builtin
host_reduce / host_gather templates), served results stay within the reduction tolerance of
eager and index outputs are exact; a served gather with an out-of-range index still raises
eager's error. Bit-identity when not served: tests/python/op_cases.py (test_bit_identical.py);
autograd: test_autograd_model.py."""

import json
import os

import pytest
import torch
import torch.nn.functional as F

import kernel_forge as kf
from kernel_forge import _jobs

REDUCTIONS = ["aten::sum.dim_IntList", "aten::sum", "aten::mean", "aten::mean.dim", "aten::amax",
              "aten::amin", "aten::max.dim", "aten::min.dim", "aten::argmax", "aten::argmin",
              "aten::prod.dim_int", "aten::prod", "aten::var.correction", "aten::std.correction",
              "aten::var_mean.correction", "aten::linalg_vector_norm", "aten::logsumexp"]
GATHERS = ["aten::embedding", "aten::index_select", "aten::gather"]


def test_intercepted_on_cpu():
    info = {o["op"]: o for o in kf.ops_info()["ops"]}
    for op in REDUCTIONS + GATHERS:
        assert op in info, f"{op} is not in the intercept list"
        assert "CPU" in info[op]["keys"].split(","), f"{op}: not intercepted on CPU: {info[op]}"


@pytest.mark.gpu
def test_intercepted_on_cuda():
    info = {o["op"]: o for o in kf.ops_info()["ops"]}
    for op in REDUCTIONS + GATHERS:
        assert "CUDA" in info[op]["keys"].split(","), (op, info[op])


def test_accumulating_reductions_get_the_reduction_tolerance():
    for op in ("aten::sum.dim_IntList", "aten::var.correction", "aten::logsumexp",
               "aten::linalg_vector_norm", "aten::prod"):
        assert _jobs.tolerance(op, torch.float32) == (1e-4, 1e-4), op
    # picking an element is exact: the elementwise tolerance
    assert _jobs.tolerance("aten::amax", torch.float32) == (1e-5, 1e-5)
    assert _jobs.tolerance("aten::argmax", torch.int64) == (0.0, 0.0)


def served(op, *args, **kwargs):
    key = kf.signature_key(op, *args, **kwargs)
    return next((r["served"] for r in kf.stats() if r["key"] == key), 0)


# shapes no other test uses: a served kernel must not leak into other tests
def test_tune_sum_serves_a_kernel():
    torch.manual_seed(0)
    x = torch.randn(193, 517)
    with _jobs.bypass():
        expect = x.sum(-1)
    res = kf.tune("aten::sum.dim_IntList", (x, [-1], False), iterations=8, kwargs={"dtype": None})
    assert res["status"] == "inserted", res
    assert res["served"], res
    print("sum", res["eager_ms"], res["best_ms"], res["speedup"])
    got = x.sum(-1)  # through the plugin: the kernel
    assert served("aten::sum.dim_IntList", x, [-1], False, dtype=None) > 0
    torch.testing.assert_close(got, expect, atol=1e-4, rtol=1e-4)
    assert got.dtype == expect.dtype and got.stride() == expect.stride()
    # another input of the same signature: still the kernel, still right
    y = torch.randn(193, 517) * 100
    with _jobs.bypass():
        expect_y = y.sum(-1)
    torch.testing.assert_close(y.sum(-1), expect_y, atol=1e-4, rtol=1e-4)


def test_a_large_embedding_table_is_written_once(monkeypatch):
    # a vocabulary's table (1.2 GB in Gemma 4) drawn again per random case made 4 files, all read
    # by every candidate's evaluation: the random cases keep the recorded table, their ids vary
    monkeypatch.setattr(_jobs, "GATHER_SOURCE_REUSE_BYTES", 1)
    w, ids = torch.randn(509, 33), torch.randint(0, 509, (3, 5))
    res = kf.tune("aten::embedding", (w, ids), iterations=2, insert=False)
    with open(os.path.join(res["job_dir"], "job.json")) as f:
        cases = json.load(f)["cases"]
    assert [c["kind"] for c in cases] == ["example", "random", "random", "random"], cases
    assert {c["inputs"][0] for c in cases} == {"c0_in0.bin"}, cases
    assert len({c["inputs"][1] for c in cases}) == 4, cases  # each case its own ids
    files = os.listdir(os.path.join(res["job_dir"], "cases"))
    assert "c1_in0.bin" not in files and "c1_in1.bin" in files, files
    # the evaluator shares the one buffer: candidates verify on every case
    assert res["status"] in ("found", "no_faster_kernel"), res
    with open(os.path.join(res["job_dir"], "tree.json")) as f:
        assert any(n["status"] in ("verified", "slower") for n in json.load(f)["nodes"])


def test_tune_embedding_serves_a_kernel_and_bad_ids_still_raise():
    torch.manual_seed(1)
    w = torch.randn(1021, 257)
    ids = torch.randint(0, 1021, (4, 97))
    with _jobs.bypass():
        expect = F.embedding(ids, w)
    res = kf.tune("aten::embedding", (w, ids), iterations=4)
    # a gather is a copy: the kernel is correct for certain, faster only where eager's dispatch
    # and threads cost more than the copy (on a loaded 2-core machine the timings decide little)
    assert res["status"] in ("inserted", "no_faster_kernel"), res
    if res["status"] != "inserted":
        # serve the best correct candidate anyway (the timing is not what this test is about)
        with open(os.path.join(res["job_dir"], "tree.json")) as f:
            nodes = json.load(f)["nodes"]
        ok = [n for n in nodes if n["status"] in ("verified", "slower", "flagged")]
        assert ok, nodes
        best = min(ok, key=lambda n: n["latency_us"])
        with open(os.path.join(res["job_dir"], best["source_file"])) as f:
            src = f.read()
        with open(os.path.join(res["job_dir"], best["launch_file"])) as f:
            launch = f.read()
        kf.add_kernel("aten::embedding", (w, ids), src, launch, allow_slower=True)
    got = F.embedding(ids, w)
    assert torch.equal(got, expect)  # a gather is exact
    assert served("aten::embedding", w, ids) > 0
    # same signature, one id out of range: the kernel declines, eager raises its own error
    bad = ids.clone()
    bad[2, 7] = 1021
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(bad, w)
    bad[2, 7] = -1
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(bad, w)
    ids2 = torch.randint(0, 1021, (4, 97))  # and the kernel still serves good ids
    before = served("aten::embedding", w, ids)
    assert torch.equal(F.embedding(ids2, w), w[ids2])
    assert served("aten::embedding", w, ids) == before + 1


# real signatures of the other overloads: the templates apply, their kernels verify, and what is
# served matches eager (exactly for indices and gathers)
HOST_CASES = {
    "var_mean": ("aten::var_mean.correction", lambda: (torch.randn(67, 301), [1]),
                 {"correction": 1, "keepdim": False}),
    "argmax_all": ("aten::argmax", lambda: (torch.randn(41, 77).t(), None, False), {}),
    "max_dim_cols": ("aten::max.dim", lambda: (torch.randn(211, 43), 0, True), {}),
    "logsumexp": ("aten::logsumexp", lambda: (torch.randn(53, 333), [-1], False), {}),
    # (ord=inf cannot become a job: job.json holds finite numbers only; the C test runs it)
    "norm_l1": ("aten::linalg_vector_norm", lambda: (torch.randn(59, 71), 1, [0], False),
                {"dtype": None}),
    "sum_int": ("aten::sum.dim_IntList", lambda: (torch.randint(-9, 9, (47, 93), dtype=torch.int32),
                                                  [0, 1], True), {"dtype": None}),
    "index_select": ("aten::index_select", lambda: (torch.randn(31, 57, 5), 1,
                                                    torch.randint(0, 57, (23,))), {}),
    "gather": ("aten::gather", lambda: (torch.randn(29, 61), 1, torch.randint(0, 61, (29, 13))), {}),
}


@pytest.mark.parametrize("name", list(HOST_CASES))
def test_host_templates_verify_and_serve_within_tolerance(name):
    op, make, kwargs = HOST_CASES[name]
    torch.manual_seed(5)
    args = make()
    fn = _jobs.resolve(op)
    with _jobs.bypass():
        expect = _jobs.tensors_of(fn(*args, **kwargs))
    res = kf.tune(op, args, iterations=3, kwargs=kwargs)
    assert res["status"] in ("inserted", "no_faster_kernel"), res
    with open(os.path.join(res["job_dir"], "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    assert any(n["status"] in ("verified", "slower", "flagged") for n in nodes), nodes
    got = _jobs.tensors_of(fn(*args, **kwargs))  # the kernel when inserted
    assert (served(op, *args, **kwargs) > 0) == (res["status"] == "inserted")
    for g, e in zip(got, expect):
        assert g.dtype == e.dtype and g.shape == e.shape and g.stride() == e.stride()
        atol, rtol = _jobs.tolerance(op, e.dtype)
        torch.testing.assert_close(g, e, atol=atol, rtol=rtol)
    print(name, res["status"], res.get("speedup"))


def test_gather_jobs_draw_indices_in_range(tmp_path):
    x = torch.randn(7, 9)
    idx = torch.randint(0, 9, (7, 4))
    key = kf.signature_key("aten::gather", x, 1, idx)
    torch.gather(x, 1, idx)  # seen, so the signature can become a job
    fn = _jobs.resolve("aten::gather")
    job = _jobs.write_job(str(tmp_path), key, [((x, 1, idx), {})], recorded=[False],
                          random_inputs=3)
    assert [c["kind"] for c in job["cases"]] == ["example", "random", "random", "random"]
    for c in job["cases"][1:]:
        raw = (tmp_path / "cases" / c["inputs"][1]).read_bytes()
        vals = torch.frombuffer(bytearray(raw), dtype=torch.int64)
        assert int(vals.min()) >= 0 and int(vals.max()) < 9, vals
    assert fn is not None


# ---- CUDA (the H200): the generic CUDA templates found, verified and served ----

CUDA_CASES = {
    "sum_rows_bf16": ("aten::sum.dim_IntList", lambda: (torch.randn(2048, 4096, dtype=torch.bfloat16,
                                                                    device="cuda"), [-1], False),
                      {"dtype": None}),
    "sum_cols": ("aten::sum.dim_IntList", lambda: (torch.randn(4096, 2048, device="cuda"), [0], False),
                 {"dtype": None}),
    "amax_f16": ("aten::amax", lambda: (torch.randn(1024, 3000, dtype=torch.float16, device="cuda"),
                                        [1], True), {}),
    "argmax_logits": ("aten::argmax", lambda: (torch.randn(64, 32000, device="cuda"), 1, False), {}),
    "max_dim": ("aten::max.dim", lambda: (torch.randn(512, 1000, device="cuda"), 1, False), {}),
    "var_mean": ("aten::var_mean.correction", lambda: (torch.randn(1024, 4096, device="cuda"), [1]),
                 {"correction": 1, "keepdim": True}),
    "logsumexp": ("aten::logsumexp", lambda: (torch.randn(256, 32000, device="cuda"), [1], False), {}),
    "vector_norm": ("aten::linalg_vector_norm", lambda: (torch.randn(4096, 1024, device="cuda"), 2,
                                                         [-1], False), {"dtype": None}),
    "embedding": ("aten::embedding", lambda: (torch.randn(32000, 1024, dtype=torch.bfloat16,
                                                          device="cuda"),
                                              torch.randint(0, 32000, (8, 512), device="cuda")), {}),
    "gather": ("aten::gather", lambda: (torch.randn(64, 32000, device="cuda"), 1,
                                        torch.randint(0, 32000, (64, 8), device="cuda")), {}),
}


# On the H200 (benchmarks/results/h200-2026-12-01-final/gpu.log) the column sum's search found no
# kernel within the tolerance of eager (no_correct_kernel): refused, so nothing wrong is served.
# The cause, reproduced on the host (host_reduce, the same shape and seed): the job's scale-100
# random case. A sum's rounding error scales with its terms (sum |x| ~ 3e5 a column), the
# tolerance with the result (1e-4 + 1e-4 |sum|); in the columns that cancel to near 0 a
# thread's sequential float sum is off by up to 4e-3 (it was the candidates' accumulation: now
# double, reduce_ops.c), and eager's own float sum by up to 8e-4 from the exact value (column
# 75: exact -0.388081755, eager -0.388916016): the correctly rounded sum fails against eager.
# Whether CUDA eager's order stays within it depends on the data; only a tolerance relative to
# the terms (or an exact reference) passes every such case.
_KNOWN = {"sum_cols": "tolerance not reliably reachable at the scale-100 case: eager's own float "
                      "column sum can be off the exact one by more than 1e-4 + 1e-4 |sum| near 0"}


@pytest.mark.gpu
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=_KNOWN[n]))
                                  if n in _KNOWN else n for n in CUDA_CASES])
def test_cuda_generic_templates_verify_and_serve(name):
    op, make, kwargs = CUDA_CASES[name]
    torch.manual_seed(3)
    args = make()
    fn = _jobs.resolve(op)
    with _jobs.bypass():
        expect = _jobs.tensors_of(fn(*args, **kwargs))
    res = kf.tune(op, args, iterations=16, kwargs=kwargs)
    assert res["status"] in ("inserted", "no_faster_kernel"), res
    with open(os.path.join(res["job_dir"], "tree.json")) as f:
        tree = json.load(f)
    verified = [n for n in tree["nodes"] if n["status"] in ("verified", "slower", "flagged")]
    assert verified, tree["nodes"]  # correct CUDA kernels were found
    got = _jobs.tensors_of(fn(*args, **kwargs))
    for g, e in zip(got, expect):
        atol, rtol = _jobs.tolerance(op, e.dtype)
        torch.testing.assert_close(g, e, atol=atol, rtol=rtol)
    print(name, res["status"], res.get("speedup"))
