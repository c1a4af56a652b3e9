"""Under --time-budget the warm-up searches in two passes: every hot signature's template start
points first (the worker's --starts-only), hottest first, then deeper searches with the time
left, each replaying its start points' timings (--timings-from) and inserting only a kernel 1%
faster than the first pass's (--better-than). Without a budget, one full search per signature."""

import json
import os

import torch

import kernel_forge as kf

from test_warmup_one_run import warm


def test_better_than_keeps_the_earlier_pass_kernel(tmp_path):
    x = torch.randn(96, 700)
    job = str(tmp_path / "job")
    kf.tune("aten::_softmax", (x, -1, False), iterations=50, margin=-100, insert=False,
            job_dir=job, _worker_args=["--starts-only"])
    with open(os.path.join(job, "tree.json")) as f:
        starts = json.load(f)["nodes"]
    # a deeper search replaying the start points: nothing 1% faster than 1 ns, kept as it was
    r = kf.tune("aten::_softmax", (x, -1, False), iterations=len(starts) + 3, margin=-100,
                insert=False, job_dir=job, _worker_args=["--timings-from", job, "--better-than", "0.001"])
    with open(os.path.join(job, "result.json")) as f:
        res = json.load(f)
    assert r["status"] == res["status"] == "no_better_kernel", res
    assert "none 1% faster than the earlier pass's kernel" in res["detail"], res
    with open(os.path.join(job, "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    replayed = [n for n in nodes[:len(starts)] if n["latency_replayed"]]
    assert replayed and all(n["latency_us"] == s["latency_us"] for n, s in zip(nodes, starts)
                            if n["latency_replayed"]), (nodes, starts)
    # a bar any kernel clears: found as usual
    r = kf.tune("aten::_softmax", (x, -1, False), iterations=len(starts), margin=-100,
                insert=False, job_dir=job, _worker_args=["--better-than", "1e9"])
    assert r["status"] == "found", r


def test_a_budget_searches_start_points_first_then_deeper(tmp_path):
    p, rows = warm(tmp_path, 12, "--time-budget", "60", "--margin", "-100")
    out = p.stdout + p.stderr
    searched = [r for r in rows.values() if r["iterations"]]
    assert searched and "[deeper 1/" in out, out[-3000:]
    # the hottest signature's second pass ran (its stop is the deeper search's, not the ramp's)
    top = max(searched, key=lambda r: r["share"])
    assert top["stop_reason"] != "start candidates evaluated" and top["status"] == "inserted", top


def test_without_a_budget_one_full_search(tmp_path):
    p, rows = warm(tmp_path, 12)
    out = p.stdout + p.stderr
    assert "[deeper" not in out
    assert all(r.get("stop_reason") != "start candidates evaluated" for r in rows.values()), rows
