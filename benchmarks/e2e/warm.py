"""The warm-up phase of run.py: kernel_forge's `kforge warmup` on forward.py (record, capture,
tune), under a hard time limit, and what it found."""

from __future__ import annotations

import json
import os
import tempfile
import time

import harness
from phases import PhaseTimeout, time_limit

HERE = os.path.dirname(os.path.abspath(__file__))


def rows_from_jobs(work: str) -> list[dict]:
    """The warm-up's rows from its job folders, when it was stopped before returning them."""
    from kernel_forge import _warmup

    try:
        with open(os.path.join(work, "plan.json")) as f:
            plan = json.load(f)
        with open(os.path.join(work, "jobs.json")) as f:
            jobs = json.load(f)
    except (OSError, ValueError):
        return []
    rows = []
    for p in plan["jobs"]:
        row = {"key": p["key"], "signature": p["signature"], "iterations": 0, "wall_s": 0.0,
               "status": "not tuned: the warm-up was stopped"}
        job_dir = jobs.get(p["key"], {}).get("job_dir") or ""
        path = os.path.join(job_dir, "result.json")
        if os.path.exists(path):
            with open(path) as f:
                r = json.load(f)
            keep = ("status", "eager_us", "best_us", "speedup", "iterations", "wall_s", "llm",
                    "roofline_us")
            row.update({k: r.get(k) for k in keep}, entry_key=r.get("cache_key"),
                       bytes_moved=_warmup.job_bytes(job_dir))
        rows.append(row)
    return rows


def summary(w: dict, budget: float, proposer: str, wall: float) -> dict:
    rows = w.get("rows", [])
    out = {"budget_s": budget, "wall_s": wall, "proposer": proposer, "planned": len(rows),
           "jobs": sum(1 for r in rows if r.get("iterations")),
           "inserted": sum(1 for r in rows if r.get("status") == "inserted"),
           "search_s": sum(r.get("wall_s") or 0 for r in rows), "rows": rows}
    usage = [r["llm"] for r in rows if r.get("llm")]
    if usage:
        out["llm"] = {k: sum(u.get(k, 0) for u in usage)
                      for k in ("calls", "requests", "input_tokens", "output_tokens", "cost_usd")}
        out["llm"]["price_known"] = all(u.get("price_known", True) for u in usage)
    if w.get("error"):
        out["error"] = w["error"]
    return out


def run_warmup(run, a, ops: list[str], proposer: str) -> tuple[dict, list[dict]]:
    """(the warm-up's summary with its rows, the recording run's stats rows)."""
    import kernel_forge as kf
    from kernel_forge import _warmup

    budget = max(10.0, min(a.warmup_budget, 0.6 * run.left()))  # the rest: rounds, cold start
    script = [os.path.join(HERE, "forward.py"), *harness.workload_argv(a),
              "--iters", str(a.script_iters)]
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kforge-e2e-warmup-") as work:
        try:
            # the budget bounds the search; the hard limit also catches a hanging script run
            with time_limit(1.25 * budget + 30, "the warm-up"):
                w = _warmup.warmup(script, iterations=a.iterations, time_budget=budget, ops=ops,
                                   min_share=a.min_share, max_jobs=a.max_jobs, work_dir=work,
                                   proposer=a.proposer, llm_budget_usd=a.llm_budget_usd,
                                   log=run.log)
        except (PhaseTimeout, kf.KernelForgeError) as e:
            w = {"rows": rows_from_jobs(work), "error": str(e)}
            run.log(f"warm-up: {e}")
        try:
            with open(os.path.join(work, "record.json")) as f:
                record = json.load(f)["rows"]
        except (OSError, ValueError, KeyError):
            record = []
    if w.get("rows") and not w.get("error"):
        print(_warmup.table(w["rows"]), flush=True)
    return summary(w, budget, proposer, time.monotonic() - t), record
