"""benchmarks/e2e on the CPU: the workloads build and run at tiny sizes, the report's join and
outcomes, and the driver end to end (warm-up with the host backend, plugin vs eager, cold start)."""

import argparse
import importlib.util
import json
import math
import os
import sys

import pytest
import torch

from conftest import ROOT, run_python

E2E = os.path.join(ROOT, "benchmarks", "e2e")
sys.path.insert(0, E2E)

import coldstart  # noqa: E402
import harness  # noqa: E402
import report  # noqa: E402
import warm  # noqa: E402
import workloads  # noqa: E402

needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="needs transformers")
# one thread: the CPU tests must not depend on how busy the machine's cores are
ENV = {"OMP_NUM_THREADS": "1"}


def setup(model, **kw):
    a = argparse.Namespace(model=model, device="cpu", tiny=True, layers=None, dtype=None)
    vars(a).update(kw)
    return harness.Setup(a)


# ---- workloads ----

@pytest.mark.parametrize("name", workloads.names())
def test_workload_builds_and_runs_tiny(name):
    wl = workloads.get(name)
    if wl.missing():
        pytest.skip(f"needs {', '.join(wl.missing())}")
    s = setup(name)
    assert s.dtype == torch.float32 and s.dtype_name == "f32"
    out = s.forward()
    assert isinstance(out, torch.Tensor) and out.numel() > 0
    assert torch.isfinite(out).all()
    assert wl.summary and 0 < wl.tolerance < 1
    assert all(t > 0 for t in s.time_ms(2))
    assert len(s.host_ms) == 2 and all(t > 0 for t in s.host_ms)


def test_mmdit_and_vae_shapes():
    s = setup("mmdit")
    latent = s.inputs[0]
    assert s.forward().shape == latent.shape  # the denoiser predicts a latent-shaped tensor
    assert len(s.model.blocks) == 2 and s.model.blocks[0].dual and s.model.blocks[-1].pre_only
    assert len(setup("mmdit", layers=1).model.blocks) == 1
    v = setup("vae")
    z = v.inputs
    assert v.forward().shape == (z.shape[0], 3, 8 * z.shape[2], 8 * z.shape[3])
    with pytest.raises(ValueError, match="no --layers"):
        setup("vae", layers=2)


@needs_transformers
@pytest.mark.parametrize("family", ["gemma4", "qwen3_5"])
def test_decode_steps_all_see_the_prefilled_state(family):
    s = setup(f"{family}-decode")
    cache = s.inputs["cache"]
    before = cache.get_seq_length()
    a, b = s.forward(), s.forward()
    assert torch.equal(a, b), "every decode step starts from the same cache"
    assert cache.get_seq_length() == before, "the stored cache is never written"
    assert a.shape[:2] == (s.inputs["input_ids"].shape[0], 1)


@needs_transformers
def test_llm_layers_follow_the_real_config():
    from workloads import llm

    tc = llm.text_config("qwen3_5")  # real sizes: only the config, no weights
    assert tc.num_hidden_layers == 4 and tc.hidden_size == 4096
    assert tc.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    assert llm.text_config("gemma4", layers=6).num_hidden_layers == 6


# ---- report ----

def prof_row(key, op="aten::gelu", calls=20, eager_us=50.0, share=0.1, **kw):
    r = {"key": key, "op": op, "signature": f"{op.split('::')[1]}({key})", "calls": calls,
         "eager_us": eager_us, "share": share, "intercepted": True, "servable": True,
         "has_kernel": False, "bytes_moved": 400_000, "bw_gbs": 100.0}
    r.update(kw)
    return r


def test_outcome_says_why_a_signature_ran_eager():
    p = prof_row("a")

    def why(final=None, warm_row=None, rec=None, entry=None, prof=p, **kw):
        kw.setdefault("min_share", 0.01)
        kw.setdefault("max_jobs", 6)
        return report.outcome(prof, final, warm_row, rec, entry, **kw)

    assert why({"served": 5, "has_kernel": True}) == (True, "served")
    assert why({"served": 5, "has_kernel": False, "served_slower": True}) == \
        (False, "slower in process (speed guard)")
    assert why(entry={"disabled": True, "disabled_reason": "max abs error 3"}) == \
        (False, "rejected on first use: max abs error 3")
    assert why(warm_row={"status": "no_faster_kernel"})[1] == "no faster kernel"
    assert why(warm_row={"status": "no_template"})[1] == "no template for this op/signature"
    assert why(warm_row={"status": "no_correct_kernel"})[1] == "no correct kernel found"
    assert why(warm_row={"status": f"not tuned: {p['signature']}: argument 'other' is a "
                                   "wrapped"})[1] == "not tuned: argument 'other' is a wrapped"
    assert why(warm_row={"status": "inserted"}, final={"calls": 3})[1] == \
        "inserted, not served in this process"
    assert why(prof=dict(p, servable=False))[1].startswith("not servable")
    assert why(ops=["aten::relu"])[1] == "not tuned (not in --ops)"
    assert why(rec={"share": 0.2})[1] == "not tuned (beyond --max-jobs 6)"
    assert why(untuned="not tuned (the warm-up stopped early)")[1] == \
        "not tuned (the warm-up stopped early)"
    assert why(rec={"share": 0.004})[1] == "not hot enough (0.4% of the recorded op time < 1%)"


def test_op_rows_join_profile_stats_and_warmup():
    profile = [prof_row("a", calls=20, eager_us=50.0), prof_row("b", op="aten::silu", calls=10,
                                                                eager_us=20.0, share=0.001),
               dict(prof_row("obs"), intercepted=False)]
    final = [{"key": "a", "calls": 40, "served": 40, "fallback": 0, "served_us": 25.0,
              "has_kernel": True}]
    warm_rows = [{"key": "a", "status": "inserted", "eager_us": 48.0, "best_us": 24.0,
                  "speedup": 2.0, "iterations": 8, "wall_s": 3.0, "roofline_pct": 16.0}]
    rows = report.op_rows(profile, final, warm_rows, [], [], n_profile=10, eager_fwd_ms=1.0,
                          min_share=0.01, max_jobs=6)
    assert [r["key"] for r in rows] == ["a", "b"]  # observer-only rows are not ops of ours
    a, b = rows
    assert a["calls_per_forward"] == 2 and a["share_of_eager"] == pytest.approx(0.1)
    assert a["served"] and a["outcome"] == "served"
    assert a["forged_us"] == 25.0 and a["speedup"] == pytest.approx(2.0)
    # 400 kB at 100 GB/s is 4 us: 8% of the eager time, 16% of the forged one
    assert a["eager_bw_pct"] == pytest.approx(8.0) and a["forged_bw_pct"] == pytest.approx(16.0)
    assert a["worker"]["iterations"] == 8 and a["served_calls"] == 40
    assert not b["served"] and b["forged_us"] is None and b["speedup"] is None
    assert b["outcome"].startswith("not hot enough")
    # eager 1 ms per forward; "a" saves 2 calls x 25 us
    assert report.amdahl_ms(rows, 1.0) == pytest.approx(0.95)


def test_e2e_row_medians_and_speedups():
    row = report.e2e_row({"eager": [10.0, 12.0, 11.0], "plugin": [8.0, 9.0, 10.0], "compile": []},
                         {"eager": [11.0], "plugin": [9.0]})
    assert row["eager_ms"] == 11.0 and row["plugin_ms"] == 9.0
    assert row["plugin_speedup"] == pytest.approx(11 / 9)
    assert row["compile_ms"] is None and row["compile_speedup"] is None
    assert row["forwards"] == {"eager": 3, "plugin": 3, "compile": 0}
    assert "host_ms" not in row
    row = report.e2e_row({"eager": [10.0], "plugin": [8.0]}, None,
                         {"eager": [9.0, 9.5, 9.9], "plugin": [7.0, 6.0, 6.5], "compile": []})
    assert row["host_ms"] == {"eager": 9.5, "plugin": 6.5}
    md = report.markdown({"model": "m", "e2e": row})
    assert "host time to issue a forward (median ms" in md and "eager 9.500, plugin 6.500" in md


def test_chain_rows_per_forward_with_bytes_and_bandwidth():
    entry = {"sig_hex": "aa", "ops": "add.Tensor -> native_layer_norm", "state": "served",
             "cache_key": "k1", "kernel_us": 20.0, "eager_us": 50.0,
             "heads": 30, "completed": 28, "dropped": 2, "skipped": 0}
    before = [dict(entry, heads=10, completed=8, dropped=2)]
    warm = [{"entry_key": "k1", "bytes_moved": 40e6, "roofline_us": 10.0},
            {"entry_key": None, "bytes_moved": 1}]
    (row,) = report.chain_rows(before, [entry], 10, warm)
    assert row["heads"] == 2 and row["completed"] == 2 and row["dropped"] == 0
    assert row["launches_saved"] == 2  # a completed two-member chain saves one launch
    # 40 MB whose roofline time is 10 us, served in 20 us: half the copy bandwidth
    assert row["bytes_moved"] == 40e6 and row["copy_bw_pct"] == pytest.approx(50.0)
    md = report.markdown({"model": "m", "chains": [row]})
    assert "| 40.00 | 50% |" in md
    (row,) = report.chain_rows([], [dict(entry, kernel_us=-1)], 10, warm)
    assert row["copy_bw_pct"] is None  # no kernel sample yet
    (row,) = report.chain_rows([], [entry], 10)
    assert row["bytes_moved"] is None and row["copy_bw_pct"] is None


def test_report_flags_eager_that_moved_during_the_run():
    res = {"model": "resnet50", "e2e": report.e2e_row({"eager": [7.9], "plugin": [6.9]})}
    res["e2e"]["eager_before_warmup_ms"] = 4.98  # run I: the other lane's warm-up began
    assert "eager moved +59%" in report.markdown(res)
    res["e2e"]["eager_before_warmup_ms"] = 7.5
    assert "eager moved" not in report.markdown(res)


def test_compare_is_normwise_and_checks_nonfinite():
    ref = torch.tensor([1.0, -4.0, 2.0])
    ok = report.compare(ref + torch.tensor([0.0, 0.1, 0.0]), ref, 0.05)
    assert ok["ok"] and ok["max_abs"] == pytest.approx(0.1) and ok["max_rel"] == pytest.approx(0.025)
    assert not report.compare(ref + 1, ref, 0.05)["ok"]
    nan = report.compare(torch.tensor([1.0, float("nan"), 2.0]), ref, 0.05)
    assert not nan["ok"] and not nan["same_nonfinite"]
    assert "shape" in report.compare(ref[:2], ref, 0.05)["error"]


def test_markdown_renders_partial_and_full_results():
    partial = {"model": "vae", "phases": {"build": 1.0}}
    assert "# End to end: vae" in report.markdown(partial)
    ops = report.op_rows([prof_row("a")], [], [{"key": "a", "status": "no_faster_kernel",
                                                "iterations": 4, "eager_us": 1, "best_us": 2,
                                                "wall_s": 1}], [], [], n_profile=10,
                         eager_fwd_ms=2.0, min_share=0.01, max_jobs=6)
    full = {"model": "vae", "summary": "s", "dtype": "bf16", "device": "cuda",
            "e2e": report.e2e_row({"eager": [2.0], "plugin": [1.0], "compile": [0.5]}),
            "check": {"plugin": report.compare(torch.ones(2), torch.ones(2), 0.05)},
            "warmup": {"planned": 1, "jobs": 1, "inserted": 0, "wall_s": 5, "search_s": 1,
                       "budget_s": 150, "proposer": "builtin",
                       "llm": {"requests": 2, "input_tokens": 10, "output_tokens": 5,
                               "cost_usd": 0.01}},
            "ops": ops, "cold_start": {"validation_cost_ms": None, "modes": {
                "first": {"to_first_served_s": 3.0, "first_forward_ms": 50.0,
                          "steady_forward_ms": 2.0, "forwards_until_served": 1,
                          "to_model_built_s": 2.0},
                "off": {"error": "timed out after 10 s"}}}}
    md = report.markdown(full)
    for text in ("| vae | 2.000 | 1.000 | 0.500 | 2.000x | 4.000x |", "**match**", "$0.0100",
                 "## Per op", "no faster kernel", "1.0 / 2.0 us, 4 it", "## Cold start",
                 "timed out after 10 s"):
        assert text in md, text


def test_warmup_rows_recovered_from_job_folders(tmp_path):
    done, busy = tmp_path / "j1", tmp_path / "j2"
    done.mkdir()
    busy.mkdir()
    (done / "result.json").write_text(json.dumps({"status": "inserted", "eager_us": 9.0,
                                                  "best_us": 3.0, "speedup": 3.0,
                                                  "iterations": 5, "wall_s": 2.0,
                                                  "cache_key": "k1", "roofline_us": 1.5}))
    (done / "job.json").write_text(json.dumps({"bytes_moved": 4096}))
    (tmp_path / "plan.json").write_text(json.dumps({"jobs": [{"key": "a", "signature": "sa"},
                                                             {"key": "b", "signature": "sb"}]}))
    (tmp_path / "jobs.json").write_text(json.dumps({"a": {"job_dir": str(done)},
                                                    "b": {"job_dir": str(busy)}}))
    a, b = warm.rows_from_jobs(str(tmp_path))
    assert a["status"] == "inserted" and a["iterations"] == 5
    # what the chain table joins on: the entry, its bytes and roofline time
    assert (a["entry_key"], a["bytes_moved"], a["roofline_us"]) == ("k1", 4096, 1.5)
    assert b["status"] == "not tuned: the warm-up was stopped"
    s = warm.summary({"rows": [a, b], "error": "stopped"}, 100, "builtin", 50.0)
    assert (s["planned"], s["jobs"], s["inserted"], s["error"]) == (2, 1, 1, "stopped")
    assert warm.rows_from_jobs(str(tmp_path / "missing")) == []


def test_cold_start_summary_counts_from_the_spawn():
    rec = {"main": 100.1, "torch": 101.0, "kernel_forge": 101.2, "built": 102.0,
           "validate": "first", "cache_entries": 2,
           "forwards": [{"ms": 30.0, "end": 102.1, "served": 0},
                        {"ms": 12.0, "end": 102.2, "served": 4},
                        {"ms": 10.0, "end": 102.3, "served": 8}],
           "fresh": {"eager": 11.0, "plugin": 9.5, "rounds": 4, "iters": 20}}
    m = coldstart.summarize(rec, 100.0)
    assert m["to_first_served_s"] == pytest.approx(2.2) and m["forwards_until_served"] == 2
    assert m["to_model_built_s"] == pytest.approx(2.0) and m["first_forward_ms"] == 30.0
    assert m["steady_forward_ms"] == 10.0
    assert (m["fresh_eager_ms"], m["fresh_plugin_ms"]) == (11.0, 9.5)
    assert "eager 11.000 ms vs plugin 9.500 ms (1.158x)" in coldstart.describe(m)


def test_time_limit_stops_a_phase_and_its_child_process():
    import subprocess
    import time

    from phases import PhaseTimeout, time_limit

    t = time.monotonic()
    with pytest.raises(PhaseTimeout, match="the sleep did not finish in 1 s"):
        with time_limit(1, "the sleep"):
            subprocess.run(["sleep", "30"])
    assert time.monotonic() - t < 10
    with time_limit(0, "no limit"):  # 0: none
        pass


def test_late_phases_shrink_to_the_time_left(tmp_path):
    import time

    from phases import Run

    # run.py by its path: benchmarks/zoo has a run.py too, and test_zoo puts its folder first
    spec = importlib.util.spec_from_file_location("e2e_run", os.path.join(E2E, "run.py"))
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)

    a = driver.parse_args(["vae", "--device", "cpu", "--time-limit", "30"])
    res = {"phases": {"build": 40.0}}
    r = Run(a, res, str(tmp_path / "e2e-vae"), time.monotonic() - 25)  # 5 s left
    assert driver.compile_model(r, None, None, eager_ms=10.0) is None
    driver.cold_start(r)
    assert "cold_start" not in res
    assert res["notes"][0].startswith("torch.compile skipped")
    assert res["notes"][1].startswith("cold start skipped")


# ---- the driver, end to end ----

def run_driver(tmp_path, *args, timeout=400):
    out = tmp_path / "out"
    p = run_python([os.path.join(E2E, "run.py"), *args, "--device", "cpu", "--tiny",
                    "--out", str(out), "--cache-dir", str(tmp_path / "cache")], ENV,
                   timeout=timeout)
    model = args[0]
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    with open(out / f"e2e-{model}.json") as f:
        res = json.load(f)
    return res, (out / f"e2e-{model}.md").read_text(), p.stdout


def test_driver_end_to_end_on_a_tiny_mmdit(tmp_path):
    res, md, log = run_driver(tmp_path, "mmdit", "--iters", "3", "--rounds", "2",
                              "--iterations", "8", "--max-jobs", "3", "--min-share", "0",
                              "--ops", "gelu,native_layer_norm", "--warmup-budget", "120",
                              "--compile-backend", "eager")
    for phase in ("build", "eager", "profile", "warmup", "plugin", "compile", "settle",
                  "rounds", "cold start"):
        assert phase in res["phases"], phase
        assert f"{phase} done in" in log
    # eager measured again before the rounds, until back near its time before the warm-up
    st = res["settle"]
    assert st["eager_medians_ms"] and st["s"] >= 0 and "back to it in" in md
    e = res["e2e"]
    for k in ("eager_ms", "plugin_ms", "compile_ms", "plugin_speedup", "compile_speedup"):
        assert e[k] > 0, k
    assert e["forwards"] == {"eager": 6, "plugin": 6, "compile": 6}
    assert res["check"]["plugin"]["ok"], res["check"]
    assert res["check"]["compile"]["max_rel"] == 0  # the eager backend computes what eager does
    w = res["warmup"]
    assert w["proposer"] == "builtin" and w["jobs"] >= 1 and w["wall_s"] > 0
    assert any(r["iterations"] > 0 for r in w["rows"]), w["rows"]  # the forge searched
    ops = res["ops"]
    assert ops and all(r["op"] for r in ops)
    fields = {"op", "signature", "share_of_eager", "eager_us", "forged_us", "speedup",
              "eager_bw_pct", "forged_bw_pct", "served", "outcome", "worker"}
    assert all(fields <= set(r) for r in ops)
    shares = [r["share_of_eager"] or 0 for r in ops]
    assert shares == sorted(shares, reverse=True)
    for r in ops:  # every row either served or says why not; served rows have their time
        assert r["outcome"]
        assert r["served"] == (r["outcome"] == "served")
        if r["served"]:
            assert r["forged_us"] > 0 and r["speedup"] > 0 and r["served_calls"] > 0
        if r["op"] not in ("aten::gelu", "aten::native_layer_norm"):  # or a Python number's op
            assert r["outcome"] == "not tuned (not in --ops)" or \
                r["outcome"].startswith("not servable: "), r
    tuned = {r["key"] for r in w["rows"]}
    assert tuned <= {r["key"] for r in ops}, "every tuned signature has its row"
    assert res["served"]["calls"] == sum(r["served_calls"] for r in ops if r["served"])
    cs = res["cold_start"]["modes"]
    assert set(cs) == {"first", "off", "none"} and not any("error" in m for m in cs.values()), cs
    assert cs["first"]["validate"] == "first" and cs["off"]["validate"] == "off"
    # the baseline process: nothing registered, eager only
    none = cs.pop("none")
    assert none["validate"] == "no plugin" and none["fresh_eager_ms"] > 0
    assert none["fresh_plugin_ms"] is None and none["cache_entries"] == 0
    assert res["cold_start"]["plugin_vs_no_plugin"] > 0
    assert "KFORGE_DISABLE=1" in md
    for m in cs.values():
        assert 0 < m["to_torch_imported_s"] < m["to_model_built_s"]
        assert m["first_forward_ms"] > 0
        assert m["fresh_eager_ms"] > 0 and m["fresh_plugin_ms"] > 0  # eager vs plugin, fresh
    if res["served"]["calls"]:  # served in a fresh process too, from its first forward
        assert cs["first"]["forwards_until_served"] == 1
        assert cs["first"]["to_first_served_s"] > cs["first"]["to_model_built_s"]
        assert res["cold_start"]["validation_cost_ms"] is not None
    assert res["env"]["torch"] == torch.__version__ and res["command"].startswith("python ")
    for text in ("# End to end: mmdit", "| mmdit |", "## Warm-up", "## Per op", "## Cold start"):
        assert text in md, text


@needs_transformers
def test_driver_decode_records_only_the_decode_step(tmp_path):
    res, _, _ = run_driver(tmp_path, "gemma4-decode", "--iters", "2", "--rounds", "1",
                           "--iterations", "3", "--max-jobs", "1", "--warmup-budget", "60",
                           "--no-compile", "--no-cold-start")
    assert res["check"]["plugin"]["ok"] and not math.isnan(res["e2e"]["plugin_ms"])
    sigs = [r["signature"] for r in res["ops"]]
    assert sigs
    # the prefill's hidden states ([2, 16, 64]) are set-up: neither recorded nor tuned
    assert not any("f32[2,16,64]" in s for s in sigs), sigs
    assert any("f32[2,1,64]" in s for s in sigs), sigs
    assert "compile" not in res["phases"] and "cold_start" not in res
