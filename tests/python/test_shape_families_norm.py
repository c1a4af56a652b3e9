"""Shape families of the row norms (host layer_norm; CUDA layer_norm, rms_norm) and of the CUDA
softmax (README, "Shape families"): a kernel tuned on [64, 768] reads its row count at launch
(and on CUDA its grid follows it), so its cache entry serves every row count of the same
normalized shape, [37, 768] and [1, 768], with no job of their own; [64, 767] is another
normalized shape and is not served.

Each case runs in a fresh process with its own cache folder (a family entry serves every row
count: it must not leak into the session's cache that other tests share)."""

import json

import pytest

from conftest import run_python

# Tunes the op at TUNED (margin -1: inserted even when not faster on a busy machine; serving is
# the point here), then calls the other shapes; prints what it saw as one JSON line.
SCRIPT = r"""
import json, os, sys, torch
import kernel_forge as kf
from kernel_forge import _jobs

op, dev, dtype, tuned, others = sys.argv[1], sys.argv[2], getattr(torch, sys.argv[3]), \
    json.loads(sys.argv[4]), json.loads(sys.argv[5])
torch.manual_seed(0)
cols = tuned[-1]

def make(rows, cols):
    x = torch.randn(rows, cols, device=dev, dtype=dtype)
    w = torch.randn(cols, device=dev, dtype=dtype)
    b = torch.randn(cols, device=dev, dtype=dtype)
    if op == "aten::native_layer_norm":
        return (x, [cols], w, b, 1e-5), lambda: torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
    if op == "aten::_fused_rms_norm":
        return (x, [cols], w, 1e-6), lambda: torch.ops.aten._fused_rms_norm(x, [cols], w, 1e-6)
    return (x, -1, False), lambda: torch.ops.aten._softmax(x, -1, False)

args, _ = make(*tuned)
res = kf.tune(op, args, iterations=6, margin=-1.0)
jobs = set(os.listdir(_jobs.jobs_root()))
tol = 1e-2 if dtype == torch.bfloat16 else 1e-3 if dtype == torch.float16 else 1e-4
out = {"status": res["status"], "cache_key": res["cache_key"], "match": {}}
for rows, c in others:
    _, call = make(rows, c)
    got = [call() for _ in range(3)]  # learns eager's outputs, then served
    with _jobs.bypass():
        want = call()
    want = want if isinstance(want, (tuple, list)) else (want,)
    ok = True
    for g in got:
        g = g if isinstance(g, (tuple, list)) else (g,)
        ok &= all(torch.allclose(a.float(), e.float(), atol=tol, rtol=tol) and a.shape == e.shape
                  for a, e in zip(g, want))
    out["match"][f"{rows}x{c}"] = bool(ok)
out["rows"] = {r["signature"]: {k: r[k] for k in ("served", "fallback", "has_kernel", "family",
                                                  "family_entry")}
               for r in kf.stats() if r["op"] == op}
out["new_jobs"] = sorted(set(os.listdir(_jobs.jobs_root())) - jobs)
out["entries"] = [{k: e[k] for k in ("key", "family")} for e in kf.cache_entries()]
print("RESULT " + json.dumps(out))
"""


def result_of(p):
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def row(res, prefix):
    hits = [v for k, v in res["rows"].items() if k.startswith(prefix)]
    assert len(hits) == 1, (prefix, sorted(res["rows"]))
    return hits[0]


def check_family(tmp_path, op, dev, dtype, family, short, dt):
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "KFORGE_JOBS_DIR": str(tmp_path / "jobs")}
    others = [[37, 768], [1, 768], [64, 767]]
    p = run_python(["-c", SCRIPT, op, dev, dtype, json.dumps([64, 768]), json.dumps(others)], env)
    res = result_of(p)
    assert res["status"] == "inserted", res
    key = res["cache_key"]
    assert [e["key"] for e in res["entries"]] == [key], res["entries"]
    assert res["entries"][0]["family"].startswith(family), res["entries"]
    family = res["entries"][0]["family"]
    tuned = row(res, f"{short}({dt}[64,768]")
    assert tuned["has_kernel"] and tuned["family"] == ""
    for rows in (37, 1):
        r = row(res, f"{short}({dt}[{rows},768]")
        assert res["match"][f"{rows}x768"], res
        assert r["served"] >= 2 and r["fallback"] == 1, r  # the first call taught eager's layout
        assert r["family"] == family and r["family_entry"] == key, r
    other = row(res, f"{short}({dt}[64,767]")
    assert res["match"]["64x767"]
    assert other["served"] == 0 and not other["has_kernel"] and other["family"] == ""
    assert res["new_jobs"] == []


def test_host_layer_norm_family(tmp_path):
    check_family(tmp_path, "aten::native_layer_norm", "cpu", "float32",
                 "native_layer_norm(f32[*,768], normalized_shape=[768], f32[768], f32[768], "
                 "eps=1e-05)", "native_layer_norm", "f32")


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["layer_norm_f32", "layer_norm_bf16", "rms_norm_bf16",
                                  "softmax_f32", "softmax_bf16"])
def test_cuda_families(tmp_path, case):
    """The CUDA row templates: rows at launch, grid.x = ceil(rows / rows per block) (times the
    cluster size) computed by the loader from the launch-time ints."""
    name, dtype = case.rsplit("_", 1)
    dt = {"f32": "float32", "bf16": "bfloat16"}[dtype]
    op, short = {"layer_norm": ("aten::native_layer_norm", "native_layer_norm"),
                 "rms_norm": ("aten::_fused_rms_norm", "_fused_rms_norm"),
                 "softmax": ("aten::_softmax", "_softmax")}[name]
    # the family's form: the signature's, its rows starred (a CUDA signature may name its device)
    check_family(tmp_path, op, "cuda", dt, f"{short}({dtype}[*,768]", short, dtype)
