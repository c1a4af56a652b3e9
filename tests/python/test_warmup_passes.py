"""Under --time-budget the warm-up searches in two passes: every hot op signature's template start
points first (the worker's --starts-only; a chain's job searches whole), hottest first, then
deeper searches with the time left, each replaying its start points' timings (--timings-from) and inserting only a kernel 1%
faster than the first pass's (--better-than). Without a budget, one full search per signature."""

import json
import os

import torch

import kernel_forge as kf
from kernel_forge import _jobs

from test_warmup_one_run import warm


def test_better_than_keeps_the_earlier_pass_kernel(tmp_path):
    x = torch.randn(256, 2048)
    job = str(tmp_path / "job")
    kf.tune("aten::_softmax", (x, -1, False), iterations=50, margin=-100, insert=False,
            job_dir=job, _worker_args=["--starts-only"])
    with open(os.path.join(job, "tree.json")) as f:
        starts = json.load(f)["nodes"]

    def again(*args):  # the same job folder, its cases and eager time as they are
        return _jobs.run_worker(job, extra_args=["--no-insert", "--iterations",
                                                 str(len(starts) + 3), *args])

    # a deeper search replaying the start points: nothing 1% faster than 1 ns, kept as it was
    res = again("--timings-from", job, "--better-than", "0.001")
    assert res["status"] == "no_better_kernel", res
    assert "none 1% faster than the earlier pass's kernel" in res["detail"], res
    with open(os.path.join(job, "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    replayed = [n for n in nodes[:len(starts)] if n["latency_replayed"]]
    assert replayed and all(n["latency_us"] == s["latency_us"] for n, s in zip(nodes, starts)
                            if n["latency_replayed"]), (nodes, starts)
    # a bar any kernel clears: as without one ("found"; or, where a busy box slowed eager's own
    # timing tenfold, every candidate flagged as too fast to trust: "no_faster_kernel")
    assert again("--better-than", "1e9")["status"] in ("found", "no_faster_kernel")


def test_a_budget_searches_start_points_first_then_deeper(tmp_path):
    p, rows = warm(tmp_path, 12, "--time-budget", "60", "--margin", "-100")
    out = p.stdout + p.stderr
    searched = [r for r in rows.values() if r["iterations"] and r["op"] != "kforge::chain"]
    assert searched and "[deeper 1/" in out, out[-3000:]
    # the hottest op signature's second pass ran (its stop is the deeper search's, not the ramp's)
    top = max(searched, key=lambda r: r["share"])
    assert top["stop_reason"] != "start candidates evaluated", top


def test_without_a_budget_one_full_search(tmp_path):
    p, rows = warm(tmp_path, 12)
    out = p.stdout + p.stderr
    assert "[deeper" not in out
    assert all(r.get("stop_reason") != "start candidates evaluated" for r in rows.values()), rows
