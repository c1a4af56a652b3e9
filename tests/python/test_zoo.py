"""benchmarks/zoo on the CPU: run.py on a tiny transformers model through the public commands
(eager without the plugin, `kforge warmup`, the plugin on the warm cache), a broken script and an
unknown name reported as rows without stopping the run, and every number of the table traced back
to what the steps themselves printed. The report's arithmetic (noise, merge) on made-up rows."""

import importlib.util
import json
import os
import shutil
import sys
import tarfile
import types

import pytest

from conftest import ROOT, run_python

ZOO = os.path.join(ROOT, "benchmarks", "zoo")
sys.path.insert(0, ZOO)

import zoo_report as report  # noqa: E402

# run.py by its path: benchmarks/e2e has a run.py too, and sys.modules keeps the first one imported
_spec = importlib.util.spec_from_file_location("zoo_run", os.path.join(ZOO, "run.py"))
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)

needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="needs transformers")


def zoo_line(log_path):
    """The ZOO record a script printed, read from its log apart from run.py's own parsing."""
    with open(log_path) as f:
        lines = [ln for ln in f.read().splitlines() if ln.startswith("ZOO ")]
    assert len(lines) == 1, log_path
    return json.loads(lines[0][4:])


def test_discover_lists_every_model_with_a_family():
    models = zoo.discover(os.path.join(ZOO, "models"))
    assert len(models) >= 10
    assert {m["family"] for m in models.values()} >= {"cnn", "vit", "encoder", "decoder-prefill",
                                                      "decoder-decode", "speech", "diffusion"}
    assert all(m["summary"] for m in models.values())
    assert "_zoo" not in models


def test_discover_lists_the_held_out_scripts():
    """benchmarks/heldout runs through the same runner: each script has a family and a summary;
    the shared builders (_zoo, _vision) are no models."""
    models = zoo.discover(os.path.join(os.path.dirname(ZOO), "heldout"))
    assert {"densenet121", "deit_small", "gpt2", "mistral_prefill"} <= set(models)
    assert all(m["family"] in report.FAMILIES and m["summary"] for m in models.values())
    assert not {"_zoo", "_vision"} & set(models)


@needs_transformers
def test_run_tiny_bert_and_a_broken_script(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for f in ("_zoo.py", "bert_base.py"):
        shutil.copy(os.path.join(ZOO, "models", f), models / f)
    (models / "broken.py").write_text('"""Fails on purpose."""\nFAMILY = "cnn"\n'
                                      'raise RuntimeError("broken on purpose")\n')
    out, work = tmp_path / "out", tmp_path / "work"
    r = run_python([os.path.join(ZOO, "run.py"), "--models", "broken,bert_base,no_such_model",
                    "--models-dir", str(models), "--budget", "0",
                    # --no-check: the harness's mechanics; the model check's verdict on a tiny
                    # model on a busy 2-core box is timing (test_model_check.py tests it)
                    "--warmup-args", "--ops native_layer_norm --iterations 3 --no-check",
                    "--model-args", "--device cpu --tiny --iters 4 --warmup 2",
                    "--eager-runs", "1", "--plugin-runs", "1", "--settle", "0", "--no-compile",
                    "--ab", "1",
                    "--out", str(out),
                    "--work", str(work)],
                   env_extra={"OMP_NUM_THREADS": "1"}, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.load(open(out / "zoo.json"))
    rows = {x["model"]: x for x in doc["results"]}
    assert [x["model"] for x in doc["results"]] == ["broken", "bert_base", "no_such_model"]

    # failures are rows, with the reason
    assert rows["broken"]["status"].startswith("failed")
    assert "RuntimeError: broken on purpose" in rows["broken"]["status"]
    assert rows["no_such_model"]["status"] == "failed: no such model"

    b = rows["bert_base"]
    assert b["status"] == "ok", b
    logs = work / "logs"
    eager, plugin = zoo_line(logs / "bert_base-eager.log"), zoo_line(logs / "bert_base-plugin.log")
    assert not eager["plugin_loaded"]  # the eager process never imported kernel_forge
    assert plugin["plugin_loaded"] and plugin["cache_dir"] == str(work / "cache-bert_base")
    assert eager["device"] == plugin["device"] == "cpu" and eager["iters"] == 4
    assert b["eager_ms"] == eager["median_ms"] and b["plugin_ms"] == plugin["median_ms"]
    assert b["speedup"] == pytest.approx(eager["median_ms"] / plugin["median_ms"])
    # one block enabled, one disabled, in the plugin process; the eager one has none
    assert "ab" not in eager and plugin["ab"]["blocks"] == 1 and plugin["ab"]["per_block"] == 3
    assert b["ab_runs"] == [plugin["ab"]["speedup"]] and b["ab_speedup"] == plugin["ab"]["speedup"]
    assert plugin["ab"]["speedup"] == pytest.approx(plugin["ab"]["disabled_ms"]
                                                    / plugin["ab"]["enabled_ms"])
    assert b["ab_p10_runs"] == [plugin["ab"]["speedup_p10"]]
    assert plugin["ab"]["speedup_p10"] == pytest.approx(plugin["ab"]["disabled_p10_ms"]
                                                        / plugin["ab"]["enabled_p10_ms"])
    assert b["eager_ms"] > 0 and b["plugin_ms"] > 0 and b["eager_spread"] is None
    # served counts are the plugin process's own stats
    assert b["served_signatures"] == plugin["served_signatures"] == len(
        [s for s in plugin["served"] if s["served"]])
    assert b["served_calls"] == sum(s["served"] for s in plugin["served"])
    assert sum(b["served_ops"].values()) == b["served_calls"]
    # the warm-up's own results, and the cache folder it filled is what the plugin process read
    wres = json.load(open(work / "bert_base-warmup.json"))
    assert b["tuned"] == len(wres["rows"]) >= 1
    assert {x["op"] for x in wres["rows"]} == {"aten::native_layer_norm"}
    assert b["inserted"] == sum(1 for x in wres["rows"] if x["status"] == "inserted")
    manifests = [f for f in os.listdir(work / "cache-bert_base" / "entries") if f.endswith(".json")] \
        if os.path.isdir(work / "cache-bert_base" / "entries") else []
    assert plugin["cache_entries"] == len(manifests) == b["inserted"]
    assert b["served_signatures"] <= b["inserted"]
    # host layer_norm kernels beat eager's on these tiny rows by several times (the forge's CPU
    # table): the warm-up inserts them and the fresh process serves them
    assert b["inserted"] >= 1 and b["served_signatures"] >= 1
    assert set(b["served_ops"]) == {"native_layer_norm"}
    assert b["warmup_s"] > 0
    # the plugin's output against eager's, within f32's tolerance
    assert b["check_plugin"]["finite"] and b["check_plugin"]["rel"] <= 1e-3
    assert "compile_ms" not in b and "compile" not in b["steps"]

    md = open(out / "zoo.md").read()
    line = next(ln for ln in md.splitlines() if ln.startswith("| bert_base |"))
    assert f"| {b['eager_ms']:.3f} | {b['plugin_ms']:.3f} |" in line
    assert f"{b['speedup']:.2f}x" in line and f"| {b['ab_speedup']:.3f}x |" in line
    assert "In one process, the plugin enabled vs disabled in turn" in md
    assert f"| {b['served_signatures']} ({b['served_calls']}) |" in line
    assert f"| {b['inserted']} / {b['tuned']} |" in line
    assert "1 of 3 models measured with the plugin" in md
    assert "broken on purpose" in md
    with tarfile.open(out / "zoo-logs.tgz") as t:
        names = t.getnames()
    assert {"logs/bert_base-eager.log", "logs/bert_base-warmup.log", "logs/bert_base-plugin.log",
            "logs/broken-eager.log", "bert_base-warmup.json"} <= set(names)


def test_time_limit_skips_models_without_running_them(tmp_path):
    code = zoo.main(["--models", "bert_base,unet", "--time-limit", "1", "--out", str(tmp_path / "o"),
                     "--work", str(tmp_path / "w")])
    assert code == 0
    doc = json.load(open(tmp_path / "o" / "zoo.json"))
    assert [x["status"] for x in doc["results"]] == ["skipped: time limit"] * 2
    assert not os.listdir(tmp_path / "w" / "logs")  # nothing was started
    assert "No model was measured with the plugin." in open(tmp_path / "o" / "zoo.md").read()


def row(model, eager_runs, plugin=None, compile_ms=None, **kw):
    e = sum(eager_runs) / len(eager_runs)
    r = {"model": model, "family": "cnn", "status": "ok", "notes": [], "steps": {},
         "eager_runs_ms": eager_runs, "eager_ms": e,
         "eager_spread": (max(eager_runs) - min(eager_runs)) / e if len(eager_runs) > 1 else None}
    if plugin is not None:
        r.update(plugin_ms=plugin, speedup=e / plugin, served_signatures=1, served_calls=10)
    if compile_ms is not None:
        r.update(compile_ms=compile_ms, compile_eager_ms=e, compile_speedup=e / compile_ms)
    r.update(kw)
    return r


def test_chains_get_their_bytes_and_copy_bandwidth_from_the_warm_up():
    chains = [{"ops": "a -> b", "cache_key": "k1", "kernel_us": 8.0, "state": "served",
               "completed": 5, "heads": 5},
              {"ops": "c -> d", "cache_key": "k2", "kernel_us": -1, "state": "checking",
               "completed": 0, "heads": 0}]
    rows = [{"entry_key": "k1", "bytes_moved": 2e6, "roofline_us": 6.0},
            {"entry_key": "k2", "bytes_moved": 1e6, "roofline_us": 3.0}]
    a, b = zoo.chain_bytes(chains, rows)
    assert a["bytes_moved"] == 2e6 and a["copy_bw_pct"] == pytest.approx(75.0)
    assert b["bytes_moved"] == 1e6 and b["copy_bw_pct"] is None  # never timed
    assert "2.00 MB, 75% of copy bandwidth" in report.details({"model": "m", "chains": [a, b]})


def test_the_warm_ups_model_check_is_in_the_model_line(tmp_path):
    # run.py keeps the verdict `kforge warmup --json` wrote (the model check disables entries
    # after the search, so a table of inserted rows alone cannot say why a chain went off)
    said = "kept chain kernels off (...); disabled 4 entries the run served; medians ..."

    def step(*_a, **_k):  # the warm-up, as far as run.py sees it: its --json file
        (tmp_path / "m-warmup.json").write_text(json.dumps({"rows": [], "check": {"keep": "ops",
                                                                                   "said": said}}))
        return {"error": None, "rc": 0, "wall_s": 1.0}
    args = types.SimpleNamespace(budget=1, warmup_args="", step_timeout=10)
    w = zoo.warmup_step("m", {"path": "m.py"}, args, str(tmp_path), "cache", [], step)
    assert w["check"] == said
    assert f"warm-up's model check: {said}" in report.details({"model": "m", "model_check": said})


def test_noise_verdict_and_summary():
    assert report.verdict(row("a", [10.0, 10.1], plugin=10.2)) == "same"      # 2% slower, 3% floor
    assert report.verdict(row("a", [10.0, 10.1], plugin=10.6)) == "slower"    # 5% slower
    assert report.verdict(row("a", [9.0, 11.0], plugin=10.6)) == "same"       # within a 20% spread
    assert report.verdict(row("a", [10.0], plugin=8.0)) == "faster"
    assert report.verdict(row("a", [10.0], plugin=10.6, plugin_spread=0.08)) == "same"
    assert report.verdict(row("a", [10.0])) is None
    rows = [row("a", [10.0, 10.0], plugin=8.0), row("b", [10.0, 10.0], plugin=11.0),
            row("c", [10.0, 10.0], plugin=10.0, served_signatures=0), row("d", [1.0])]
    text = "\n".join(report.summary(rows))
    assert "3 of 4 models measured" in text and "median speedup over eager 1.00x" in text
    assert "2 of 3 served at least one kernel" in text
    assert "beyond the noise (speedup < 1 - max(3%, eager and plugin spreads)): b." in text
    assert "| **1.25x** |" in report.table(rows) and "0.91x (slower)" in report.table(rows)


def test_merge_takes_plugin_and_compile_columns_from_their_runs(tmp_path):
    run_a = {"runs": [{"command": "a"}], "results": [row("m", [10.0, 10.0], plugin=8.0),
                                                     row("n", [5.0], plugin=5.0)]}
    run_b = {"runs": [{"command": "b"}], "results": [row("m", [12.0], compile_ms=6.0)]}
    merged = {r["model"]: r for r in report.merge_results([run_a, run_b])}
    m = merged["m"]
    assert m["eager_ms"] == 10.0 and m["speedup"] == 10.0 / 8.0  # the plugin's own eager
    assert m["compile_ms"] == 6.0 and m["compile_speedup"] == 2.0 and m["compile_eager_ms"] == 12.0
    assert merged["n"]["plugin_ms"] == 5.0 and "compile_ms" not in merged["n"]
    # the other order: compile first, then the plugin run, same row
    skipped = {"runs": [], "results": [{"model": "m", "family": "cnn", "steps": {},
                                        "status": "skipped: time limit", "notes": ["time limit"]}]}
    m2 = {r["model"]: r for r in report.merge_results([skipped, run_b, run_a, skipped])}["m"]
    assert (m2["eager_ms"], m2["speedup"], m2["compile_speedup"]) == (10.0, 1.25, 2.0)
    assert m2["status"] == "ok" and m2["notes"] == []
