"""Shape families (README, "Shape families"): a softmax kernel tuned on [64, 1000] rows (host
backend, f32) reads its row count at launch, so the cache entry states the family f32[*,1000]:
other row counts are served at once (after their own first-use check), with no job of their
own; another row length is not a member; a corrupt family record is refused with a warning.

Each part runs in a fresh process with its own cache folder: a family entry serves every row
count, so it must not leak into the session's cache that other tests share."""

import json
import os
import shutil

from conftest import run_python

TUNED = (64, 1000)
FAMILY = "_softmax(f32[*,1000], dim=-1, half_to_float=False)"

# Tunes [64, 1000] (margin -1: inserted even when not faster on a busy machine; serving is the
# point here), then calls the other shapes; prints what it saw as one JSON line.
TUNE_AND_SERVE = r"""
import json, os, torch
import kernel_forge as kf
from kernel_forge import _jobs, _tuner

torch.manual_seed(0)
x = torch.randn(64, 1000)
res = kf.tune("aten::_softmax", (x, -1, False), iterations=4, margin=-1.0)
jobs = sorted(os.listdir(_jobs.jobs_root()))
out = {"status": res["status"], "cache_key": res["cache_key"], "match": {}}
for rows, cols in [(37, 1000), (1, 1000), (64, 999)]:
    t = torch.randn(rows, cols)
    got = [torch.softmax(t, -1) for _ in range(3)]  # learns eager's outputs, then served
    with _jobs.bypass():
        want = torch.softmax(t, -1)
    out["match"][f"{rows}x{cols}"] = all(torch.allclose(g, want, atol=1e-5, rtol=1e-5) for g in got)
rows = kf.stats()
out["rows"] = {r["signature"]: {k: r[k] for k in ("key", "served", "fallback", "has_kernel",
                                                  "family", "family_entry", "served_us")}
               for r in rows if r["op"] == "aten::_softmax"}
out["new_jobs"] = sorted(set(os.listdir(_jobs.jobs_root())) - set(jobs))
out["entries"] = [{k: e[k] for k in ("key", "family", "family_record")} for e in kf.cache_entries()]
# the tuner's rule: a family-served shape is a candidate only when far from its roofline
sm = [dict(r, share=1.0) for r in rows if r["op"] == "aten::_softmax" and r["family"]]
for r in sm:
    r["bytes_moved"] = 2 * 4 * 37 * 1000
out["cand_no_bw"] = [r["key"] for r in _tuner.hot_candidates(sm, 1, 0.0, set())]
out["cand_near"] = [r["key"] for r in _tuner.hot_candidates(sm, 1, 0.0, set(), 1e-9)]
out["cand_far"] = [r["key"] for r in _tuner.hot_candidates(sm, 1, 0.0, set(), 1e12)]
print("RESULT " + json.dumps(out))
"""

SERVE_ONLY = r"""
import json, torch
import kernel_forge as kf
for rows in (64, 37):
    t = torch.randn(rows, 1000)
    for _ in range(3):
        torch.softmax(t, -1)
print("RESULT " + json.dumps({r["signature"]: [r["served"], r["family"]] for r in kf.stats()
                              if r["op"] == "aten::_softmax"}))
"""


def result_of(p):
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def row(res, sig):
    return next(v for k, v in res["rows"].items() if k.startswith(sig))


def test_family_serves_other_row_counts_without_a_job(tmp_path):
    cache = str(tmp_path / "cache")
    env = {"KFORGE_CACHE_DIR": cache, "KFORGE_JOBS_DIR": str(tmp_path / "jobs")}
    res = result_of(run_python(TUNE_AND_SERVE, env))
    assert res["status"] == "inserted", res
    key = res["cache_key"]
    tuned = row(res, "_softmax(f32[64,1000]")
    assert tuned["has_kernel"] and tuned["family"] == ""  # its own entry, exactly
    for rows in (37, 1):
        r = row(res, f"_softmax(f32[{rows},1000]")
        assert res["match"][f"{rows}x1000"]
        assert r["served"] >= 2 and r["fallback"] == 1, r  # the first call taught eager's layout
        assert r["family"] == FAMILY and r["family_entry"] == key
    other = row(res, "_softmax(f32[64,999]")
    assert res["match"]["64x999"]
    assert other["served"] == 0 and not other["has_kernel"] and other["family"] == ""
    assert res["new_jobs"] == []
    assert res["entries"] == [{"key": key, "family": FAMILY, "family_record": True}]
    # no bandwidth known: the family keeps its shapes; near the roofline too; far: a job
    fam_keys = sorted(row(res, f"_softmax(f32[{n},1000]")["key"] for n in (37, 1))
    assert res["cand_no_bw"] == [] and res["cand_near"] == []
    assert sorted(res["cand_far"]) == fam_keys

    # kforge's listing shows the family
    p = run_python(["-m", "kernel_forge", "cache", "ls", "--dir", cache], env)
    assert p.returncode == 0, p.stderr
    assert "_softmax(f32[*,1000]" in p.stdout

    # a corrupt family record: refused with a warning, the entry still serves its own shape
    entries = os.path.join(cache, "entries")
    manifest = os.path.join(entries, key + ".json")
    with open(manifest) as f:
        doc = json.load(f)
    assert doc["family"]["free_dims"] == [0]
    doc["family"]["free_dims"] = [0, 5]  # a dim the tensors do not have
    bad = str(tmp_path / "bad")
    shutil.copytree(cache, bad)
    with open(os.path.join(bad, "entries", key + ".json"), "w") as f:
        json.dump(doc, f)
    p = run_python(SERVE_ONLY, {"KFORGE_CACHE_DIR": bad})
    seen = result_of(p)
    assert "family record is refused" in p.stderr and key in p.stderr, p.stderr[-2000:]
    s64 = next(v for k, v in seen.items() if k.startswith("_softmax(f32[64,1000]"))
    s37 = next(v for k, v in seen.items() if k.startswith("_softmax(f32[37,1000]"))
    assert s64[0] >= 2 and s37 == [0, ""]
    p = run_python(["-m", "kernel_forge", "cache", "ls", "--json", "--dir", bad], env)
    listed = json.loads(p.stdout)
    assert "does not have" in listed[0]["family_refused"]
