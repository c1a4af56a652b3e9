"""The typed (unboxed) fast path (torch_ext/typed.cpp) changes nothing but the host cost.

op_cases.py runs three times: eager (KFORGE_DISABLE=1), with the plugin and its typed fast path
(the default), and with the plugin and boxed interceptors only (KFORGE_TYPED=0). Every case's
outputs must be bit-identical to eager's (or the identical error) on both plugin runs, and every
case's stats rows (op, signature, key, calls, served, fallback) identical between the two. The
typed run must really have registered the typed path for the common schemas. A served kernel
reached through the typed path is served, counted and guarded as through the boxed one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import op_cases  # noqa: E402
from test_bit_identical import compare_results  # noqa: E402

TIMEOUT_S = 300
# ops whose schema has a typed variant: each must get it on the CPU key
TYPED_OPS = ["aten::add.Tensor", "aten::mul.Tensor", "aten::relu", "aten::clamp_min", "aten::silu",
             "aten::gelu", "aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm",
             "aten::pow.Tensor_Scalar",
             # in-place and out=: the written argument is the result
             "aten::relu_", "aten::clamp_min_", "aten::add_.Tensor", "aten::mul_.Tensor",
             "aten::addcmul_", "aten::hardtanh_", "aten::gelu_", "aten::copy_", "aten::clamp_",
             "aten::mul.out",
             "aten::add.out",
             # norms, reductions and the rest of the common schemas
             "aten::native_group_norm", "aten::native_batch_norm",
             "aten::_native_batch_norm_legit_no_training", "aten::sum", "aten::sum.dim_IntList",
             "aten::amax", "aten::max.dim", "aten::clamp", "aten::where.self", "aten::addcmul",
             # casts, a tensor list and the gathers
             "aten::_to_copy", "aten::cat", "aten::embedding", "aten::index_select", "aten::gather"]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_") or k == "KFORGE_INTERCEPT"}
    env["KFORGE_CACHE_DIR"] = os.path.join(ROOT, "build", "empty-kernel-cache")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("fastpath")
    modes = {"eager": _env(KFORGE_DISABLE="1"), "typed": _env(), "boxed": _env(KFORGE_TYPED="0")}
    procs = {m: subprocess.Popen([sys.executable, str(HERE / "op_cases.py"), str(out / f"{m}.pt")],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
             for m, env in modes.items()}
    loaded = {}
    for m, p in procs.items():
        stdout, stderr = p.communicate(timeout=TIMEOUT_S)
        assert p.returncode == 0, f"{m}: {stdout[-2000:]}\n{stderr[-4000:]}"
        loaded[m] = torch.load(out / f"{m}.pt", weights_only=True)
    return loaded


def test_typed_path_is_registered_for_the_common_schemas():
    # a few ops per load, so that every registration message fits the log held during load
    ops = TYPED_OPS + ["aten::div.Tensor_mode"]
    logs = {"typed": "", "boxed": ""}
    for i in range(0, len(ops), 8):
        for mode, extra in (("typed", {}), ("boxed", {"KFORGE_TYPED": "0"})):
            p = subprocess.run([sys.executable, "-c", "import kernel_forge"], cwd=ROOT, capture_output=True,
                               text=True, timeout=TIMEOUT_S,
                               env=_env(KFORGE_OPS=",".join(ops[i:i + 8]), KFORGE_LOG="debug", **extra))
            assert p.returncode == 0, p.stderr
            logs[mode] += p.stderr
    for op in TYPED_OPS:
        assert f"{op} on CPU: typed fast path" in logs["typed"], (op, logs["typed"])
    assert "typed fast path\n" not in logs["boxed"]  # KFORGE_TYPED=0: boxed interceptors only
    # a schema without a typed variant (an optional string) stays boxed
    assert "aten::div.Tensor_mode: no typed fast path for (Tensor,Tensor,str?->Tensor)" in logs["typed"]


@pytest.mark.parametrize("mode", ["typed", "boxed"])
def test_outputs_bit_identical_to_eager(runs, mode):
    loaded = runs
    eager, plugin = loaded["eager"], loaded[mode]
    for name in op_cases.CASES:
        compare_results(eager[name], plugin[name], f"{name} ({mode})")
        assert plugin[op_cases.META_KEY][name]["layouts"] == eager[op_cases.META_KEY][name]["layouts"], name
        assert plugin[op_cases.META_KEY][name]["warnings"] == eager[op_cases.META_KEY][name]["warnings"], name


def test_stats_rows_identical_typed_and_boxed(runs):
    loaded = runs
    typed = loaded["typed"][op_cases.STATS_KEY]["per_case"]
    boxed = loaded["boxed"][op_cases.STATS_KEY]["per_case"]
    assert typed.keys() == boxed.keys()
    key = lambda r: (r["op"], r["signature"])  # noqa: E731
    for name in typed:
        assert sorted(typed[name], key=key) == sorted(boxed[name], key=key), name
    # and the typed ops were intercepted at all (not skipped by both)
    ops = {r["op"] for rows in typed.values() for r in rows if r["intercepted"]}
    assert set(TYPED_OPS) <= ops, set(TYPED_OPS) - ops


SERVE = r"""
import json, os, sys, torch, kernel_forge as kf
x = torch.randn(8)
y = torch.randn(8)
src = "void k(const float *x, const float *y, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] + y[i]; }"
kf.add_kernel("aten::add.Tensor", (x, y), src,
              {"entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
               "args": ["const float*", "const float*", "float*"]}, allow_slower=True)
kf.reset_stats()
outs = [torch.add(x, y) for _ in range(40)]
key = kf.signature_key("aten::add.Tensor", x, y)  # a probe runs eager, through the same path
rows = [{k: r[k] for k in ("op", "signature", "key", "calls", "served", "fallback", "has_kernel")}
        for r in kf.stats() if r["op"] == "aten::add.Tensor"]
same = all(torch.equal(o, x + y) for o in outs)
print(json.dumps({"rows": rows, "same": same, "key": key}))
"""


def test_served_through_the_typed_path_counts_as_boxed(tmp_path):
    """A call with a kernel goes from the typed path to the same serving code: served, eager
    samples for the speed guard and the probe count alike with and without the typed path."""
    res = {}
    for mode, extra in (("typed", {}), ("boxed", {"KFORGE_TYPED": "0"})):
        env = _env(KFORGE_CACHE_DIR=str(tmp_path / mode), **extra)
        p = subprocess.run([sys.executable, "-c", SERVE], env=env, cwd=ROOT, capture_output=True,
                           text=True, timeout=TIMEOUT_S)
        assert p.returncode == 0, p.stdout + p.stderr
        res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    for mode, r in res.items():
        assert r["same"], mode
        (row,) = r["rows"]
        assert row["has_kernel"] and row["served"] > 0 and row["served"] + row["fallback"] == row["calls"], (mode, row)
    strip = lambda r: {k: v for k, v in r.items() if k != "key"}  # noqa: E731
    assert [strip(r) for r in res["typed"]["rows"]] == [strip(r) for r in res["boxed"]["rows"]]
    assert res["typed"]["key"] == res["typed"]["rows"][0]["key"]
    assert res["boxed"]["key"] == res["boxed"]["rows"][0]["key"]


ERRORS = r"""
import json, torch, kernel_forge as kf
out = {}
for name, fn in {"shape": lambda: torch.add(torch.randn(3), torch.randn(4)),
                 "alpha": lambda: torch.add(torch.ones(2, dtype=torch.long), torch.ones(2, dtype=torch.long), alpha=0.5),
                 "gelu": lambda: torch.nn.functional.gelu(torch.randn(2), approximate="bogus")}.items():
    try:
        fn()
        out[name] = None
    except Exception as e:
        out[name] = [type(e).__name__, str(e).splitlines()[0]]
rows = [{k: r[k] for k in ("op", "signature", "calls", "fallback")} for r in kf.stats()]
print(json.dumps({"errors": out, "rows": sorted(rows, key=lambda r: r["signature"])}))
"""


def test_eager_errors_unchanged_through_the_typed_path():
    res = {}
    for mode, extra in (("typed", {}), ("boxed", {"KFORGE_TYPED": "0"})):
        p = subprocess.run([sys.executable, "-c", ERRORS], env=_env(**extra), cwd=ROOT,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        assert p.returncode == 0, p.stdout + p.stderr
        res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["typed"] == res["boxed"]
    assert all(v is not None for v in res["typed"]["errors"].values()), res


SERVE_WRITTEN = r"""
import json, torch, kernel_forge as kf
x = torch.randn(8); y = torch.randn(8); o = torch.empty(8)
launch = lambda types: {"entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0, "args": types}
kf.add_kernel("aten::add_.Tensor", (x.clone(), y),
              "void k(float *x, const float *y) { for (int i = 0; i < 8; i++) x[i] += y[i]; }",
              launch(["float*", "const float*"]), allow_slower=True)
kf.add_kernel("aten::mul.out", (x, y),
              "void k(const float *x, const float *y, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] * y[i]; }",
              launch(["const float*", "const float*", "float*"]), kwargs={"out": o}, allow_slower=True)
kf.reset_stats()
same = True
for _ in range(30):
    w = x.clone()
    r = w.add_(y)  # the written argument itself comes back, holding x + y
    same = same and r is w and torch.equal(w, x + y)
    r = torch.mul(x, y, out=o)
    same = same and r is o and torch.equal(o, x * y)
rows = [{k: r[k] for k in ("op", "signature", "calls", "served", "fallback", "has_kernel")}
        for r in kf.stats() if r["op"] in ("aten::add_.Tensor", "aten::mul.out")]
print(json.dumps({"rows": sorted(rows, key=lambda r: r["op"]), "same": same}))
"""


def test_in_place_and_out_served_through_the_typed_path(tmp_path):
    """add_ and mul.out take the typed path now: a kernel for them is served there, the written
    argument is what the call returns, and stats match the boxed interceptor's."""
    res = {}
    for mode, extra in (("typed", {}), ("boxed", {"KFORGE_TYPED": "0"})):
        env = _env(KFORGE_CACHE_DIR=str(tmp_path / mode), **extra)
        p = subprocess.run([sys.executable, "-c", SERVE_WRITTEN], env=env, cwd=ROOT, capture_output=True,
                           text=True, timeout=TIMEOUT_S)
        assert p.returncode == 0, p.stdout + p.stderr
        res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    for mode, r in res.items():
        assert r["same"], mode
        assert len(r["rows"]) == 2, (mode, r["rows"])
        for row in r["rows"]:
            assert row["has_kernel"] and row["served"] > 0 and row["calls"] == 30, (mode, row)
    assert res["typed"]["rows"] == res["boxed"]["rows"]


NESTED = r"""
import json, torch, kernel_forge as kf
x = torch.randn(8)
for _ in range(5):
    torch.relu(x)  # on the CPU, relu's kernel calls clamp_min(x, 0)
ops0 = sorted({r["op"] for r in kf.stats()})
launch = {"entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
          "args": ["const float*", "float*"]}
kf.add_kernel("aten::clamp_min", (x, 0),
              "void k(const float *x, float *o) { for (int i = 0; i < 8; i++) o[i] = x[i] < 0.f ? 0.f : x[i]; }",
              launch, allow_slower=True)
kf.reset_stats()
with torch.inference_mode():
    same = all(torch.equal(torch.relu(x), x.clamp_min(0)) for _ in range(30))
rows = [{k: r[k] for k in ("op", "calls", "served")} for r in kf.stats()]
print(json.dumps({"ops0": ops0, "rows": sorted(rows, key=lambda r: r["op"]), "same": same}))
"""


@pytest.mark.parametrize("mode", ["typed", "boxed"])
def test_a_nested_call_is_looked_at_only_when_its_op_has_kernels(tmp_path, mode):
    """relu -> clamp_min: the nested call is not timed, so never tuned; without a kernel for
    clamp_min it goes straight to eager, uncounted. Once the cache holds one, nested calls are
    described again, and one with its signature is served."""
    extra = {"KFORGE_TYPED": "0"} if mode == "boxed" else {}
    p = subprocess.run([sys.executable, "-c", NESTED], env=_env(KFORGE_CACHE_DIR=str(tmp_path), KFORGE_INTERCEPT="all", **extra),
                       cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["ops0"] == ["aten::relu"], r
    assert r["same"], r
    cmin = [row for row in r["rows"] if row["op"] == "aten::clamp_min"]
    # 30 nested in relu, 30 direct
    assert sum(c["calls"] for c in cmin) == 60 and sum(c["served"] for c in cmin) > 30, r
