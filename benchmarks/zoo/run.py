"""The model zoo: every script of models/ through the public commands only, one table.

    python3 benchmarks/zoo/run.py [--models a,b] [--budget 60] [--out DIR] [--time-limit S]
    python3 benchmarks/zoo/run.py --merge A/zoo.json B/zoo.json --out DIR   (one table of several runs)

For each model, each step in a fresh process (its output in WORK/logs/MODEL-STEP.log):
  1. eager:    python models/M.py               (kernel_forge is not imported)
  2. warm-up:  kforge warmup --time-budget B models/M.py   (default options; a fresh cache
               folder per model, KFORGE_CACHE_DIR=WORK/cache-M)
  3. plugin:   python models/M.py --plugin      (`import kernel_forge`, the one line a user adds,
               on that warm cache; what it served from kernel_forge.stats())
  4. eager again and the plugin again, fresh processes alternating (--eager-runs 3, --plugin-runs
     3 in all): each variant's time is the median over its processes, and their spread is the
     process-to-process noise the speedup is read against (on the H200 one process in a few
     issues its forwards up to 2x slower on the host, eager or not)
     Each plugin process also runs --ab blocks: forwards with kernel_forge enabled and disabled
     in turn in that one process, whose ratio (`in-process x`) has no process-to-process noise
     in it, though its disabled side still pays the plugin's pass-through
  5. compile:  python models/M.py --compile     (torch.compile, default options)
The scripts time their own forwards (CUDA events) and print one `ZOO {json}` line. KFORGE_*
variables of this environment are not passed on (--env K=V adds one). One model failing is a row
of the table, not the end of the run. OUT gets zoo.md (the table), zoo.json and zoo-logs.tgz
(every step's log and JSON), rewritten after each model, so a run stopped early keeps what it had.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from zoo_report import FAMILIES, fmt, merge_results, write  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
def log(msg: str):
    print(f"[zoo {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def discover(models_dir: str) -> dict[str, dict]:
    """name -> {path, summary, family}: every models/*.py not starting with '_', read without
    importing it (the docstring's first sentence and its FAMILY constant)."""
    found = {}
    for f in sorted(os.listdir(models_dir)):
        if not f.endswith(".py") or f.startswith("_"):
            continue
        path = os.path.join(models_dir, f)
        summary, family = "", ""
        try:
            tree = ast.parse(open(path).read())
            summary = " ".join((ast.get_docstring(tree) or "").split())
            for node in tree.body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and getattr(node.targets[0], "id", None) == "FAMILY"
                        and isinstance(node.value, ast.Constant)):
                    family = node.value.value
        except (OSError, SyntaxError, ValueError):
            pass
        found[f[:-3]] = {"path": path, "summary": summary, "family": family}
    rank = {f: i for i, f in enumerate(FAMILIES)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[1]["family"], len(rank)), kv[0])))


def child_env(cache_dir: str | None, extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    if importlib.util.find_spec("kernel_forge") is None:  # a checkout, built in place
        env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    if cache_dir:
        env["KFORGE_CACHE_DIR"] = cache_dir
    env.update(extra)
    return env


def stop_group(p: subprocess.Popen):
    """SIGTERM to the step's process group (its children too: kforge warmup's script runs and
    workers), SIGKILL if it is still there 10 s later."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def run_step(cmd: list[str], env: dict, timeout: float, log_path: str) -> dict:
    """One fresh process in its own process group, output to log_path, stopped at the timeout
    (or when this process is interrupted or terminated)."""
    t0 = time.monotonic()
    with open(log_path, "w") as f:
        f.write("$ " + shlex.join(cmd) + "\n")
        f.flush()
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                             start_new_session=True)
        timed_out = False
        try:
            rc = p.wait(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_group(p)
            rc = p.returncode
        except BaseException:  # Ctrl-C, or SIGTERM (main turns it into SystemExit)
            stop_group(p)
            raise
    text = open(log_path, errors="replace").read()
    rec = None
    for line in reversed(text.splitlines()):
        if line.startswith("ZOO "):
            try:
                rec = json.loads(line[4:])
            except ValueError:
                pass
            break
    # a script that printed its result and then hung at exit (compile workers shutting down)
    # measured what it was asked to: its record counts, and the row says so
    ok = rc == 0 or (timed_out and rec is not None)
    return {"rc": rc, "timed_out": timed_out, "wall_s": time.monotonic() - t0, "record": rec,
            "error": None if ok else _why(text, rc, timed_out, timeout),
            "late_exit": timed_out and ok}


def _why(text: str, rc, timed_out: bool, timeout: float) -> str:
    if timed_out:
        return f"timed out after {timeout:.0f} s"
    lines = [ln.strip() for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
    # the exception's own line (the last "Name: message" line of a traceback), else the last line
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", ln):
            return f"exit {rc}: {ln[:300]}"
    return f"exit {rc}: {lines[-1][:300] if lines else 'no output'}"


def compare(ref_path: str, path: str) -> dict | None:
    """The saved output of a step against eager's: max|x - eager| / max|eager| for floats, the
    share of equal elements for integers (generated tokens)."""
    if not (os.path.exists(ref_path) and os.path.exists(path)):
        return None
    import torch

    ref, out = torch.load(ref_path), torch.load(path)
    if ref.shape != out.shape:
        return {"error": f"shape {tuple(out.shape)} != eager's {tuple(ref.shape)}"}
    if not ref.is_floating_point():
        return {"equal_share": (ref == out).float().mean().item()}
    scale = ref.abs().max().item() or 1.0
    return {"max_abs": (out - ref).abs().max().item(), "rel": (out - ref).abs().max().item() / scale,
            "finite": bool(torch.isfinite(out).all())}


def run_model(name: str, info: dict, a, work: str, deadline: float | None, extra_env: dict) -> dict:
    logs = os.path.join(work, "logs")
    cache = os.path.join(work, f"cache-{name}")
    shutil.rmtree(cache, ignore_errors=True)
    res = {"model": name, "family": info["family"], "summary": info["summary"],
           "script": os.path.relpath(info["path"], ROOT), "steps": {}, "status": "ok", "notes": []}
    margs = shlex.split(a.model_args)
    py = [sys.executable]

    def left():
        return float("inf") if deadline is None else deadline - time.monotonic()

    def step(key, cmd, timeout, cache_dir=None, script_step=True):
        t = min(timeout, left())
        if t < 15:
            res["steps"][key] = {"skipped": "time limit"}
            res["notes"].append(f"{key} skipped: time limit")
            log(f"{name}: {key} skipped (time limit)")
            return None
        log(f"{name}: {key}: {shlex.join(cmd[1:] if cmd[0] == sys.executable else cmd)}")
        r = run_step(cmd, child_env(cache_dir, extra_env), t, os.path.join(logs, f"{name}-{key}.log"))
        r["command"] = shlex.join(cmd)
        if not script_step:  # the warm-up prints its two script runs' lines: not a measurement
            r["record"] = None
        elif not r["error"] and not r["record"]:
            r["error"] = "no ZOO line in its output"
        res["steps"][key] = r
        if r.get("late_exit"):
            res["notes"].append(f"{key}: printed its result, then did not exit within {t:.0f} s")
        if r["error"]:
            log(f"{name}: {key} failed in {r['wall_s']:.0f} s: {r['error']}")
            res["notes"].append(f"{key}: {r['error']}")
        elif r["record"]:
            log(f"{name}: {key} done in {r['wall_s']:.0f} s: {r['record']['median_ms']:.3f} ms per "
                f"{r['record'].get('unit', 'forward')}")
        else:
            log(f"{name}: {key} done in {r['wall_s']:.0f} s")
        return r

    def script(key, flags, cache_dir=None, timeout=a.step_timeout):
        out = os.path.join(work, f"{name}-{key}.pt")
        if os.path.exists(out):
            os.remove(out)
        r = step(key, py + [info["path"], *flags, *margs, "--save-output", out], timeout, cache_dir)
        if r is None or r["error"]:
            return None
        r["output_file"] = out
        return r

    e1 = script("eager", [])
    if e1 is None:
        res["status"] = "failed: " + (res["notes"][-1] if res["notes"] else "eager")
        return res
    if e1["record"].get("plugin_loaded"):  # the baseline must be torch alone
        res["notes"].append("eager: kernel_forge was loaded in the eager process")
    eagers, plugins, p, c, w = [e1], [], None, None, None
    if not a.compile_only:
        w = warmup_step(name, info, a, work, cache, margs, step)
        if w is not None and w["error"] and not any(n.startswith("warmup:") for n in res["notes"]):
            res["notes"].append(f"warmup: {w['error']}")
        if w is not None and w.get("rc") is not None:
            res["warmup_s"] = w["wall_s"]
            res["inserted"], res["tuned"] = w.get("inserted"), w.get("tuned")
            res["warmup_statuses"] = w.get("statuses")
            res["model_check"] = w.get("check")
        time.sleep(a.settle)  # the warm-up's processes are gone; let the machine go quiet
        # plugin and eager processes alternate, so that drift hits both
        n_plugin, n_eager = max(a.plugin_runs, 1), max(a.eager_runs, 1) - 1
        for i in range(max(n_plugin, n_eager)):
            if i < n_plugin:
                r = script("plugin" if i == 0 else f"plugin{i + 1}",
                           ["--plugin", "--ab", str(a.ab)], cache)
                if r:
                    plugins.append(r)
            if i < n_eager:
                r = script(f"eager{i + 2}", [])
                if r:
                    eagers.append(r)
        p = plugins[0] if plugins else None
    if not a.no_compile:
        c = script("compile", ["--compile"], timeout=a.compile_timeout)

    # the row
    rec = e1["record"]
    res.update(unit=rec.get("unit", "forward"), dtype=rec.get("dtype"), device=rec.get("device"),
               gpu=rec.get("gpu"))
    runs = [e["record"]["median_ms"] for e in eagers]
    res["eager_runs_ms"] = runs
    res["eager_ms"] = statistics.median(runs)
    res["eager_spread"] = (max(runs) - min(runs)) / res["eager_ms"] if len(runs) > 1 else None
    if p is not None:
        pr = p["record"]  # what was served: the first plugin process's stats
        res["plugin_runs_ms"] = [x["record"]["median_ms"] for x in plugins]
        res["plugin_ms"] = statistics.median(res["plugin_runs_ms"])
        res["speedup"] = res["eager_ms"] / res["plugin_ms"]
        pr_ms = res["plugin_runs_ms"]
        res["plugin_spread"] = (max(pr_ms) - min(pr_ms)) / res["plugin_ms"] if len(pr_ms) > 1 else None
        res["served_signatures"] = pr.get("served_signatures", 0)
        res["served_calls"] = pr.get("served_calls", 0)
        res["served_ops"] = served_ops(pr.get("served", []))
        res["cache_entries"] = pr.get("cache_entries", 0)
        res["stopped"] = pr.get("stopped", [])
        res["chains"] = chain_bytes(pr.get("chains", []), (w or {}).get("rows") or [])
        res["check_plugin"] = compare(e1["output_file"], p["output_file"])
        abs_ = [x["record"]["ab"] for x in plugins if x["record"].get("ab")]
        if abs_:
            res["ab_runs"] = [x["speedup"] for x in abs_]
            res["ab_p10_runs"] = [x["speedup_p10"] for x in abs_ if "speedup_p10" in x]
            res["ab_speedup"] = statistics.median(res["ab_runs"])
            res["ab_enabled_ms"] = statistics.median(x["enabled_ms"] for x in abs_)
            res["ab_disabled_ms"] = statistics.median(x["disabled_ms"] for x in abs_)
        if not pr.get("plugin_loaded"):
            res["notes"].append("plugin: kernel_forge was not loaded")
    elif not a.compile_only:
        res["status"] = "failed: plugin step"
    if c is not None:
        res["compile_ms"] = c["record"]["median_ms"]
        res["compile_eager_ms"] = res["eager_ms"]
        res["compile_speedup"] = res["eager_ms"] / res["compile_ms"]
        res["compile_first_s"] = c["record"]["first_ms"] / 1e3
        res["check_compile"] = compare(e1["output_file"], c["output_file"])
    return res


def warmup_step(name, info, a, work, cache, margs, step):
    """`kforge warmup` with its default options (plus --warmup-args) and its --json results."""
    wj = os.path.join(work, f"{name}-warmup.json")
    if os.path.exists(wj):
        os.remove(wj)
    cmd = [*kforge_command(), "warmup", "--time-budget", f"{a.budget:g}",
           "--json", wj, *shlex.split(a.warmup_args), info["path"], *margs]
    w = step("warmup", cmd, 1.5 * a.budget + 120 if a.budget else 10 * a.step_timeout, cache,
             script_step=False)
    if w is None:
        return None
    try:
        with open(wj) as f:
            doc = json.load(f)
        rows = doc.get("rows", [])
    except (OSError, ValueError) as e:
        w["error"] = w["error"] or f"no warm-up results: {e}"
        return w
    w["tuned"] = len(rows)
    w["inserted"] = sum(1 for r in rows if r.get("status") == "inserted")
    w["statuses"] = {}
    for r in rows:
        s = r.get("status") or "?"
        if s.startswith("not tuned: "):  # the reason, shortened: budget spent, job not written
            s = "not tuned (" + " ".join(s[len("not tuned: "):].split()[:6]) + ")"
        w["statuses"][s] = w["statuses"].get(s, 0) + 1
    w["rows"] = [{k: r.get(k) for k in ("op", "signature", "share", "eager_us", "best_us",
                                         "speedup", "status", "entry_key", "bytes_moved",
                                         "roofline_us")} for r in rows]
    check = doc.get("check") or {}
    if check.get("said"):  # the model check's verdict, which disables entries after the search
        w["check"] = check["said"]
    counts = ", ".join(f"{k} {v}" for k, v in w["statuses"].items())
    log(f"{name}: warm-up: {w['inserted']} of {w['tuned']} signatures inserted "
        f"({counts or 'nothing hot enough'})")
    return w


def chain_bytes(chains: list[dict], warmup_rows: list[dict]) -> list[dict]:
    """Each chain kernel of the plugin process with the bytes it moves (its warm-up job's) and
    its share of the copy bandwidth at its fastest in-process time (the roofline time of those
    bytes over kernel_us)."""
    tuned = {r["entry_key"]: r for r in warmup_rows if r.get("entry_key")}
    out = []
    for c in chains:
        w = tuned.get(c.get("cache_key"), {})
        k_us, roof = c.get("kernel_us") or -1, w.get("roofline_us")
        out.append(dict(c, bytes_moved=w.get("bytes_moved"),
                        copy_bw_pct=100 * roof / k_us if roof and k_us > 0 else None))
    return out


def kforge_command() -> list[str]:
    """The `kforge` command line, run as `python -m kernel_forge` (the same cli.main) with this
    interpreter, so that it finds the same kernel_forge as the scripts: a `kforge` found on PATH
    may belong to another environment or checkout."""
    return [sys.executable, "-m", "kernel_forge"]


def served_ops(served: list[dict]) -> dict:
    """op -> served calls, from the plugin process's served rows."""
    ops = {}
    for r in served:
        op = r["op"].split("::")[-1]
        ops[op] = ops.get(op, 0) + r["served"]
    return dict(sorted(ops.items(), key=lambda kv: -kv[1]))


def versions() -> dict:
    v = {"python": sys.version.split()[0]}
    for mod in ("torch", "torchvision", "timm", "transformers", "kernel_forge"):
        try:
            v[mod] = importlib.metadata.version(mod)
        except importlib.metadata.PackageNotFoundError:
            v[mod] = None
    try:
        v["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                   "--format=csv,noheader"], capture_output=True, text=True,
                                  timeout=10).stdout.strip().splitlines()[0] or None
    except (OSError, subprocess.SubprocessError, IndexError):
        v["gpu"] = None
    # a device snapshot (scripts/device-snapshot.sh) has no .git of its own: git would answer
    # for the checkout around it, so its COMMIT file wins
    stamp = os.path.join(ROOT, "COMMIT")
    if os.path.isfile(stamp):
        with open(stamp) as f:
            v["commit"] = f.read().strip() or None
        return v
    try:
        v["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        v["commit"] = None
    return v


def pack(out: str, work: str):
    """Every step's log and JSON in one archive (the device tool brings back few files)."""
    with tarfile.open(os.path.join(out, "zoo-logs.tgz"), "w:gz") as t:
        for sub in ("logs",):
            if os.path.isdir(os.path.join(work, sub)):
                t.add(os.path.join(work, sub), arcname=sub)
        for f in sorted(os.listdir(work)):
            if f.endswith("-warmup.json"):
                t.add(os.path.join(work, f), arcname=f)


def merge(paths: list[str], out: str) -> int:
    docs = []
    for pth in paths:
        with open(pth) as f:
            docs.append(json.load(f))
    write(out, {"runs": [run for d in docs for run in d["runs"]], "results": merge_results(docs)})
    print(open(os.path.join(out, "zoo.md")).read())
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--models", default="", help="comma list (default: every script of models/)")
    p.add_argument("--models-dir", default=os.path.join(HERE, "models"))
    p.add_argument("--budget", type=float, default=60,
                   help="kforge warmup --time-budget per model, seconds (default 60; 0: none)")
    p.add_argument("--warmup-args", default="",
                   help="more kforge warmup options (default none: its defaults)")
    p.add_argument("--model-args", default="", help="options for every script, e.g. '--tiny'")
    p.add_argument("--eager-runs", type=int, default=3,
                   help="fresh eager processes: one before the warm-up, the others alternating "
                        "with the plugin's after it (default 3); eager's time is their median")
    p.add_argument("--plugin-runs", type=int, default=3,
                   help="fresh plugin processes on the warm cache (default 3); the plugin's time "
                        "is their median, as eager's is of the eager processes")
    p.add_argument("--ab", type=int, default=4, metavar="BLOCKS",
                   help="in each plugin process, BLOCKS blocks each with the plugin enabled and "
                        "disabled in turn (default 4; 0: none)")
    p.add_argument("--settle", type=float, default=3,
                   help="seconds of pause after the warm-up, before the plugin's process (3)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--compile-only", action="store_true",
                   help="eager and torch.compile only (no warm-up, no plugin): with --merge, a "
                        "table whose compile column comes from a separate run")
    p.add_argument("--step-timeout", type=float, default=180,
                   help="seconds one script run may take (default 180)")
    p.add_argument("--compile-timeout", type=float, default=300,
                   help="seconds the torch.compile run may take, compilation included (300)")
    p.add_argument("--time-limit", type=float, default=0,
                   help="seconds for the whole run (0: none); a model that cannot start its "
                        "warm-up in time is skipped, a step is cut at the limit")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="an environment variable for every step (KFORGE_* are not passed on)")
    p.add_argument("--out", default="zoo-out", help="zoo.md, zoo.json, zoo-logs.tgz (default zoo-out)")
    p.add_argument("--work", help="logs, outputs, cache folders (default: a new folder in the "
                   "temporary folder, so that OUT holds only the three result files)")
    p.add_argument("--merge", nargs="+", metavar="ZOO_JSON", help="merge earlier runs' zoo.json")
    a = p.parse_args(argv)
    if a.merge:
        return merge(a.merge, a.out)
    t0 = time.monotonic()
    deadline = t0 + a.time_limit if a.time_limit else None
    models = discover(a.models_dir)
    names = [m for m in a.models.split(",") if m] or list(models)
    extra_env = dict(kv.split("=", 1) for kv in a.env)
    work = os.path.abspath(a.work or tempfile.mkdtemp(prefix="kforge-zoo-"))
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    run = {"command": shlex.join([os.path.relpath(sys.argv[0], ROOT) if argv is None else "run.py",
                                  *(sys.argv[1:] if argv is None else argv)]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "budget": a.budget, "warmup_args": a.warmup_args, "model_args": a.model_args,
           "steps": "eager, torch.compile" if a.compile_only else
                    "eager, warm-up, plugin" + ("" if a.no_compile else ", torch.compile"),
           "env": versions()}
    doc = {"runs": [run], "results": []}
    log(f"{len(names)} models: {', '.join(names)}; warm-up budget {a.budget:g} s; work {work}")
    for i, name in enumerate(names):
        if name not in models:
            doc["results"].append({"model": name, "family": None, "status": "failed: no such model",
                                   "notes": [f"not in {a.models_dir}"], "steps": {}})
            continue
        # what a model needs at least: an eager run and the warm-up and a plugin run, or compile
        need = 90 if a.compile_only else (a.budget or 60) + 90
        if deadline is not None and deadline - time.monotonic() < need:
            log(f"{name}: skipped: {deadline - time.monotonic():.0f} s left, {need:.0f} s needed")
            doc["results"].append({"model": name, "family": models[name]["family"],
                                   "status": "skipped: time limit", "notes": ["time limit"],
                                   "steps": {}})
            continue
        log(f"== [{i + 1}/{len(names)}] {name}: {models[name]['summary'][:100]}")
        t = time.monotonic()
        try:
            res = run_model(name, models[name], a, work, deadline, extra_env)
        except Exception as e:  # reported, not fatal for the other models
            res = {"model": name, "family": models[name]["family"], "notes": [],
                   "status": f"failed: {type(e).__name__}: {e}", "steps": {}}
        res["wall_s"] = time.monotonic() - t
        doc["results"].append(res)
        log(f"{name}: {res['status']} in {res['wall_s']:.0f} s: eager {fmt(res.get('eager_ms'), '{:.3f}')} "
            f"ms, plugin {fmt(res.get('plugin_ms'), '{:.3f}')} ms ({fmt(res.get('speedup'), '{:.2f}x')}"
            f", {res.get('served_signatures', 0)} kernels served), compile "
            f"{fmt(res.get('compile_ms'), '{:.3f}')} ms")
        run["wall_s"] = time.monotonic() - t0
        write(a.out, doc)
        pack(a.out, work)
    run["wall_s"] = time.monotonic() - t0
    write(a.out, doc)
    pack(a.out, work)
    print(open(os.path.join(a.out, "zoo.md")).read(), flush=True)
    log(f"done in {run['wall_s']:.0f} s: {os.path.join(a.out, 'zoo.md')}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that a step's group stops too
    sys.exit(main())
