"""`kforge`: the command line.

  kforge run [-m] SCRIPT [ARGS...]
                                run a Python script (or module) with the plugin loaded and recording on;
                                print the hottest signatures when it exits
  kforge warmup [options] SCRIPT [ARGS...]
                                run the script (record, then capture real inputs: in the same
                                run after 5 module forwards), tune its hot signatures with the
                                forge worker, print a table
  kforge doctor                 versions, devices, cache folder, intercept list, dependencies
  kforge cache ls|show|rm|clear|export|import|verify|push|pull
                                the kernel cache folder (KFORGE_CACHE_DIR or --dir); push, pull
                                and ls --remote: the fleet cache (KFORGE_REMOTE_CACHE)
  kforge jobs ls|clean [--dir DIR] [--all]
                                the job folders: their state and size; clean removes the cases
                                (or with --all the folders) of the jobs not being searched
  kforge ui [--port N] [--host H] [--allow-host NAME] [--cache DIR] [--jobs DIR] [--stats FILE]
                                a local web app: job folders, search trees, candidates, cache
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys

from ._text import fmt_table, shorten


def stats_table(rows, top=20, width=90) -> str:
    """The hottest signatures as text. Rows marked '*' were seen by the observer only."""
    shown = rows[:top]
    body = []
    for r in shown:
        mark = "" if r["intercepted"] else "*"
        body.append([
            f"{100 * r['share']:5.1f}%", f"{r['time_ms']:.3f}", str(r["calls"]), str(r["served"]),
            str(r["fallback"]), (r["device"] or "-"), mark + shorten(r["signature"], width),
        ])
    text = fmt_table(body, ["share", "time ms", "calls", "served", "eager", "device", "signature"],
                      [">", ">", ">", ">", ">", "<", "<"])
    notes = []
    if len(rows) > top:
        notes.append(f"({len(rows) - top} more signatures; --top N shows more)")
    if any(not r["intercepted"] for r in shown):
        notes.append("* = not intercepted: seen by the op observer, host self time, by op name")
    if any(r["time_source"] == "cuda-events" for r in shown):
        notes.append("CUDA rows: sampled device time from CUDA events; their share is of the "
                     "device time recorded, other rows' share is of host time")
    return text + ("\n" + "\n".join(notes) if notes else "")


def chains_table(chains, top=10, width=90) -> str:
    """Recorded chains as text: calls, share of the recorded time, the ops in call order."""
    body = [[f"{100 * c['share']:5.1f}%", str(c["calls"]), c["status"],
             shorten(" -> ".join(op.replace("aten::", "") for op in c["ops"]), width)]
            for c in chains[:top]]
    text = fmt_table(body, ["share", "calls", "status", "ops"], [">", ">", "<", "<"])
    if len(chains) > top:
        text += f"\n({len(chains) - top} more chains)"
    return text


def cmd_run(args) -> int:
    import kernel_forge as kf
    from ._warmup import run_script

    kf.set_recording(True)
    try:
        code = run_script(args.script, args.args, args.module)
    finally:
        kf.set_recording(False)
        rows = kf.stats()
        print("\nkforge: hottest signatures (intercepted rows: sampled time, per exact signature)")
        print(stats_table(rows, top=args.top))
        chains = kf.chains()
        if chains:
            print("\nkforge: recurring chains of calls linked by dataflow (kernel_forge.chains())")
            print(chains_table(chains))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
            print(f"kforge: stats written to {args.json}")
    return code


def cmd_warmup(args) -> int:
    from . import _warmup

    script_cmd = (["-m"] if args.module else []) + [args.script] + args.args
    if not args.module and not os.path.exists(args.script):
        print(f"kforge warmup: no such script: {args.script}", file=sys.stderr)
        return 2
    if not -100 <= args.margin <= 0.99:
        print(f"kforge warmup: --margin must be in [-100, 0.99], not {args.margin}",
              file=sys.stderr)
        return 2
    if args.max_chains < 0:
        print(f"kforge warmup: --max-chains must be >= 0 (0: no limit), not {args.max_chains}",
              file=sys.stderr)
        return 2
    if args.stagnation is not None and args.stagnation < 0:
        print(f"kforge warmup: --stagnation must be >= 0 (0: never), not {args.stagnation}",
              file=sys.stderr)
        return 2
    res = _warmup.warmup(script_cmd, iterations=args.iterations, time_budget=args.time_budget,
                         ops=[o for arg in args.ops for o in arg.split(",") if o],
                         min_share=args.min_share, max_jobs=args.max_jobs,
                         chains=not args.no_chains, max_chains=args.max_chains,
                         seed=args.seed, margin=args.margin,
                         stagnation=args.stagnation,
                         log=lambda m: print(m, file=sys.stderr),
                         proposer=args.proposer, llm_budget_usd=args.llm_budget_usd,
                         llm_max_requests=args.llm_max_requests, check=not args.no_check)
    print("\nkforge warmup: results")
    print(_warmup.table(res["rows"]) if res["rows"] else "(nothing hot enough to tune)")
    if any(r.get("llm") for r in res["rows"]):
        print("\nkforge warmup: LLM cost")
        print(_warmup.cost_table(res["rows"]))
    apart = sorted((r for r in res.get("skipped", []) if r.get("untunable")),
                   key=lambda r: -r["time_ms"])
    if apart:
        print(f"\nkforge warmup: {len(apart)} signatures that can never be tuned (not ranked)")
        print(fmt_table([[f"{r['time_ms']:.3f}", shorten(r["signature"], 60), r["untunable"]]
                         for r in apart[:10]], ["time ms", "signature", "why"], [">", "<", "<"]))
    inserted = sum(1 for r in res["rows"] if r["status"] == "inserted")
    print(f"{inserted} kernels inserted into {res['cache_dir']}"
          + (f" in {res['wall_s']:.0f} s" if res.get("wall_s") else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
        print(f"kforge warmup: results written to {args.json}")
    return 0


def _nvrtc_version():
    """The NVRTC the plugin would open: KFORGE_NVRTC (which loading the package points at torch's
    CUDA wheels, _native._locate_cuda_toolkit), else the names the nvrtc backend searches."""
    chosen = os.environ.get("KFORGE_NVRTC")
    for path in [chosen] if chosen else ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]:
        try:
            lib = ctypes.CDLL(path)
            major, minor = ctypes.c_int(), ctypes.c_int()
            if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0:
                return f"{major.value}.{minor.value} ({path})"
        except (OSError, AttributeError):
            continue
    return f"not found{' at ' + chosen if chosen else ''}"


def cmd_doctor(_args) -> int:
    import torch

    ok = True
    print(f"python          {sys.version.split()[0]} ({sys.executable})")
    print(f"torch           {torch.__version__} (CUDA build: {torch.version.cuda or 'no'})")
    try:
        import kernel_forge as kf
        print(f"kernel_forge    {kf.__version__} ({kf.library_path()})")
        info = kf.ops_info()
    except Exception as e:  # doctor reports, it does not crash
        print(f"kernel_forge    FAILED to load: {e}")
        return 1
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            cap = torch.cuda.get_device_capability(i)
            print(f"cuda:{i}          {torch.cuda.get_device_name(i)} (sm_{cap[0]}{cap[1]})")
    else:
        print("cuda            no device available")
    print(f"nvrtc           {_nvrtc_version()}")
    cache = info["cache_dir"]
    print(f"cache folder    {cache} ({'exists' if os.path.isdir(cache) else 'not created yet'})")
    from . import _jobs

    jobs_dir = _jobs.jobs_root()
    folders = _jobs.job_folders(jobs_dir)
    free = shutil.disk_usage(_jobs.existing_folder(jobs_dir)).free
    print(f"job folders     {len(folders)} in {jobs_dir}: "
          f"{sum(j['bytes'] for j in folders) / 1e9:.2f} GB, cases "
          f"{sum(j['case_bytes'] for j in folders) / 1e9:.2f} GB (`kforge jobs clean`); "
          f"{free / 1e9:.1f} GB free")
    cc = shutil.which(os.environ.get("CC", "cc"))
    cc_ver = "not found"
    if cc:
        try:
            cc_ver = subprocess.run([cc, "--version"], capture_output=True, text=True,
                                    timeout=10).stdout.splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            cc_ver = f"{cc} (version unknown)"
    print(f"C compiler      {cc_ver}")
    print(f"libcurl         {ctypes.util.find_library('curl') or 'not found'}")
    print("cJSON, xxHash   linked into the plugin at build time")
    state = "enabled" if info["enabled"] else "disabled"
    if info["disabled_by_env"]:
        state += " (KFORGE_DISABLE is set)"
    print(f"plugin          {state}; op observer {'on' if info['observer'] else 'off'}; "
          f"timing 1 call in {info['sample_every']}; first-use check: {info['validate']}")
    try:
        entries = kf.cache_entries()
        other = sum(e["elsewhere"] for e in entries)
        print(f"cache entries   {len(entries)} ({sum(e['served_here'] for e in entries)} served "
              f"in this process){'; bundle ' + info['cache_bundle'] if info['cache_bundle'] else ''}")
        if other:
            print(f"                {other} built for another environment (arch, compiler or its "
                  f"flags, torch or plugin version): not used here; `kforge warmup` tunes them again")
    except Exception as e:
        print(f"cache entries   could not be read: {e}")
    if info["bad_ops"]:
        print(f"KFORGE_OPS      ignored entries: {info['bad_ops']}")
        ok = False
    if info["error"]:
        print(f"error           {info['error']}")
        ok = False
    print("\nintercept list:")
    rows = [[o["op"], o["keys"] or "-", o["skipped"]] for o in info["ops"]]
    print(fmt_table(rows, ["op", "keys", "not intercepted on"], ["<", "<", "<"]))
    return 0 if ok else 1


def _cache_call(fn, *args):
    """Call a kf_cache_dir_* function that takes (..., err, errcap); raise on failure."""
    from . import _native

    err = ctypes.create_string_buffer(1024)
    code = fn(*args, err, len(err))
    if code:
        raise SystemExit(f"kforge cache: {err.value.decode() or _native.status_str(code)}")


def _cache_remote(args, d: str) -> int:
    """`kforge cache ls --remote | push | pull`: the fleet cache (KFORGE_REMOTE_CACHE)."""
    from . import _native, _remote

    try:
        r = _remote.Remote()
    except _remote.RemoteError as e:
        raise SystemExit(f"kforge cache {args.action}: {e}")
    ops = {o if "::" in o else f"aten::{o}" for o in args.op}
    try:
        if args.action == "push":
            local = _native.take_json(_native.lib().kf_cache_dir_ls_json(d.encode()))
            mine = [e for e in local if (not ops or e["op"] in ops) and not e["disabled"]]
            for e in mine:
                r.push(d, e["key"])
            print(f"pushed {len(mine)} entries to {r.where}")
            return 0
        descs = r.describe(r.keys())
        if ops:
            descs = [x for x in descs if x.get("op") in ops]
        if args.action == "pull":
            os.makedirs(d, mode=0o700, exist_ok=True)
            got = r.pull(d, [x["key"] for x in descs if x["present"]])
            print(f"pulled {len(got)} of {len(descs)} entries from {r.where} into {d}")
            return 0 if len(got) == len(descs) else 1
        if args.json:
            print(json.dumps(descs, indent=1))
            return 0
        rows = []
        for x in sorted(descs, key=lambda x: (x.get("op", ""), x.get("signature", ""))):
            speed = x["eager_us"] / x["kernel_us"] if x.get("kernel_us") and x.get("eager_us") else 0
            rows.append([x["key"], x.get("op", "?"), shorten(x.get("signature", "?"), 60),
                         f"{x.get('backend', '?')}/{x.get('arch', '?')}", f"{speed:.2f}x",
                         shorten(x.get("publisher", "?"), 30)])
        print(fmt_table(rows, ["key", "op", "signature", "backend/arch", "speedup", "published by"],
                         ["<"] * 4 + [">", "<"]))
        print(f"{len(descs)} entries in {r.where}")
        return 0
    except Exception as e:
        if _remote._is_down(e):
            raise SystemExit(f"kforge cache {args.action}: {r.where}: {type(e).__name__}: {e}")
        raise


def cmd_cache(args) -> int:
    import kernel_forge as kf
    from . import _native

    lib = _native.lib()
    d = (args.dir or kf.cache_dir()).encode()
    if args.action in ("push", "pull") or (args.action == "ls" and args.remote):
        return _cache_remote(args, d.decode())
    if args.action == "ls":
        entries = _native.take_json(lib.kf_cache_dir_ls_json(d))
        if args.json:
            print(json.dumps(entries, indent=1))
            return 0
        # this process's own folder: which entries it found built for another environment
        elsewhere = ({e["key"] for e in kf.cache_entries() if e["elsewhere"]}
                     if os.path.realpath(d.decode()) == os.path.realpath(kf.cache_dir()) else set())
        rows = []
        for e in sorted(entries, key=lambda e: (e["op"], e["signature"])):
            speed = e["eager_us"] / e["kernel_us"] if e.get("kernel_us") else 0
            # a shape family: the shapes the entry also serves (README, "Shape families")
            family = e.get("family_text") or ("refused" if e.get("family_refused") else "")
            state = "disabled" if e["disabled"] else "elsewhere" if e["key"] in elsewhere else "ok"
            rows.append([e["key"], e["op"], shorten(e["signature"], 70), f"{e['backend']}/{e['arch']}",
                         f"{speed:.2f}x", state, shorten(family, 60)])
        print(fmt_table(rows, ["key", "op", "signature", "backend/arch", "speedup", "state",
                               "family"], ["<"] * 4 + [">", "<", "<"]))
        print(f"{len(entries)} entries in {d.decode()}")
        return 0
    if args.action == "show":
        if not args.arg:
            raise SystemExit("kforge cache show KEY")
        err = ctypes.create_string_buffer(1024)
        ptr = lib.kf_cache_dir_show_json(d, args.arg.encode(), err, len(err))
        if not ptr:
            raise SystemExit(f"kforge cache show: {err.value.decode()}")
        print(json.dumps(_native.take_json(ptr), indent=1))
        return 0
    if args.action == "rm":
        if not args.arg:
            raise SystemExit("kforge cache rm KEY")
        _cache_call(lib.kf_cache_dir_rm, d, args.arg.encode())
        print(f"removed {args.arg}")
        return 0
    if args.action in ("disable", "enable"):
        if not args.arg:
            raise SystemExit(f"kforge cache {args.action} KEY")
        _cache_call(lib.kf_cache_dir_set_disabled, d, args.arg.encode(),
                    1 if args.action == "disable" else 0, b"disabled by the user")
        print(f"{args.action}d {args.arg}")
        return 0
    if args.action == "clear":
        _cache_call(lib.kf_cache_dir_clear, d)
        print(f"cleared {d.decode()}")
        return 0
    if args.action in ("export", "import"):
        if not args.arg:
            raise SystemExit(f"kforge cache {args.action} FILE")
        n = ctypes.c_int(0)
        if args.action == "export":
            _cache_call(lib.kf_cache_dir_export, d, args.arg.encode(), ",".join(args.op).encode(),
                        ctypes.byref(n))
            print(f"exported {n.value} entries to {args.arg}")
        else:
            _cache_call(lib.kf_cache_dir_import, d, args.arg.encode(), ctypes.byref(n))
            print(f"imported {n.value} entries into {d.decode()}")
        return 0
    if args.action == "verify":
        err = ctypes.create_string_buffer(1024)
        ptr = lib.kf_cache_dir_verify_json(d, err, len(err))
        if not ptr:
            raise SystemExit(f"kforge cache verify: {err.value.decode()}")
        problems = _native.take_json(ptr)
        for p in problems:
            print(f"{p['key'] or '-'}: {p['problem']}")
        n = len(_native.take_json(lib.kf_cache_dir_ls_json(d)))
        print(f"{n} valid entries, {len(problems)} problems")
        return 1 if problems else 0
    raise SystemExit(f"unknown cache action {args.action}")


def cmd_jobs(args) -> int:
    """List the job folders, or free their disk: `clean` removes the cases of every job not
    searched in the last JOB_IDLE_S (`--all`: the whole folders)."""
    from . import _jobs

    root = os.path.abspath(args.dir or _jobs.jobs_root())
    jobs = _jobs.job_folders(root)
    gb = lambda n: f"{n / 1e9:.2f} GB"  # noqa: E731
    if args.action == "ls":
        for j in jobs:
            print(f"{j['state']:10s} {gb(j['bytes']):>9s}  cases {gb(j['case_bytes']):>9s}  {j['name']}")
        print(f"{len(jobs)} job folders in {root}: {gb(sum(j['bytes'] for j in jobs))}, of which "
              f"cases {gb(sum(j['case_bytes'] for j in jobs))}")
        return 0
    idle = [j for j in jobs if j["state"] != "running"]
    freed = 0
    for j in idle:
        if args.all:
            shutil.rmtree(j["path"], ignore_errors=True)
            freed += j["bytes"]
        else:  # asked for: whatever KFORGE_KEEP_CASES says
            _jobs.remove_cases(j["path"])
            freed += j["case_bytes"]
    what = "job folders" if args.all else "jobs' cases"
    print(f"kforge jobs clean: removed {len(idle)} {what} in {root} ({gb(freed)}); "
          f"{len(jobs) - len(idle)} left alone (searched in the last {_jobs.JOB_IDLE_S // 60} min)")
    return 0


def cmd_ui(args) -> int:
    from .ui import serve

    return serve(host=args.host, port=args.port, cache_dir=args.cache, jobs_dir=args.jobs,
                 stats_file=args.stats, allow_hosts=args.allow_host)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kforge", description="Kernel Forge runtime plugin")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a script with the plugin loaded; print hot signatures")
    r.add_argument("--top", type=int, default=20, help="rows to print (default 20)")
    r.add_argument("--json", help="also write all stats rows to this file")
    r.add_argument("-m", dest="module", action="store_true",
                   help="SCRIPT is a module name, as with python -m")
    r.add_argument("script")
    r.add_argument("args", nargs=argparse.REMAINDER)
    r.set_defaults(fn=cmd_run)
    w = sub.add_parser("warmup", help="run a script, then tune its hot signatures into the cache")
    w.add_argument("--iterations", type=int, default=50, help="candidates per signature (default 50)")
    w.add_argument("--time-budget", type=float, default=0,
                   help="seconds for all the tuning together, from the end of the script's "
                        "run: writing the jobs and the searches, every job's template start "
                        "points first, then deeper searches (default: no limit, one full "
                        "search per job)")
    w.add_argument("--ops", action="append", default=[],
                   help="only these ops: a comma list, or the option repeated (aten::_softmax)")
    w.add_argument("--min-share", type=float, default=0.01,
                   help="tune signatures with at least this share of the recorded time (0.01)")
    w.add_argument("--max-jobs", type=int, default=0, help="tune at most this many (hottest first)")
    w.add_argument("--no-chains", action="store_true",
                   help="do not tune recorded chains (runs of ops linked by dataflow) as fused "
                        "kernels; by default the fusable ones of at least --min-share are tuned, "
                        "in one priority order with the ops")
    w.add_argument("--no-check", action="store_true",
                   help="skip the model check: by default, once kernels were inserted (or the "
                        "cache served the script already), the script "
                        "runs once more with its forwards timed with every kernel, with chain "
                        "kernels off and with nothing served in turn, and what makes the model "
                        "slower as a whole is disabled (stops the script once judged)")
    w.add_argument("--max-chains", type=int, default=0,
                   help="tune at most this many chains (hottest first; default: no limit)")
    w.add_argument("--stagnation", type=int, default=None, metavar="N",
                   help="stop a search after N candidates in a row without a 1%% gain or a new "
                        "template (0: never; default: max(10, iterations / 2))")
    w.add_argument("--seed", type=int, default=1, help="search seed (default 1)")
    w.add_argument("--margin", type=float, default=0.03,
                   help="insert a kernel only if it beats eager by this fraction (default 0.03; "
                        "-100 to 0.99; a negative value inserts slower ones, for testing only)")
    w.add_argument("--proposer", choices=["builtin", "llm", "mixed"], default=None,
                   help="who writes candidates (default: mixed when KFORGE_LLM_URL is set, "
                        "else builtin; README \"LLM proposer\")")
    w.add_argument("--llm-budget-usd", type=float, default=None,
                   help="stop a job's search when the model has cost this many US$")
    w.add_argument("--llm-max-requests", type=int, default=None,
                   help="stop a job's search after this many requests to the model")
    w.add_argument("--json", help="also write the results to this file")
    w.add_argument("-m", dest="module", action="store_true",
                   help="SCRIPT is a module name, as with python -m")
    w.add_argument("script")
    w.add_argument("args", nargs=argparse.REMAINDER)
    w.set_defaults(fn=cmd_warmup)
    d = sub.add_parser("doctor", help="versions, devices, cache folder, intercept list")
    d.set_defaults(fn=cmd_doctor)
    c = sub.add_parser("cache", help="list, inspect, remove, export, import, verify cache entries")
    c.add_argument("action", choices=["ls", "show", "rm", "disable", "enable", "clear", "export",
                                      "import", "verify", "push", "pull"])
    c.add_argument("arg", nargs="?", help="KEY (show, rm, disable, enable) or FILE (export, import)")
    c.add_argument("--dir", help="cache folder (default: KFORGE_CACHE_DIR or ~/.cache/kernel_forge)")
    c.add_argument("--op", action="append", default=[], help="export, push, pull: only entries "
                   "of this op (repeatable), e.g. aten::_softmax")
    c.add_argument("--remote", action="store_true",
                   help="ls: the fleet cache (KFORGE_REMOTE_CACHE) instead of the local folder")
    c.add_argument("--json", action="store_true", help="ls: print JSON")
    c.set_defaults(fn=cmd_cache)
    j = sub.add_parser("jobs", help="list the job folders, or remove their cases (clean)")
    j.add_argument("action", choices=["ls", "clean"])
    j.add_argument("--dir", help="job folders (default: KFORGE_JOBS_DIR, else CACHE/jobs)")
    j.add_argument("--all", action="store_true", help="clean: remove whole folders, not just cases")
    j.set_defaults(fn=cmd_jobs)
    u = sub.add_parser("ui", help="a local web app over the job folders and the cache")
    u.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free port)")
    u.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; anything else is reachable by others)")
    u.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another name the browser reaches the UI by (a requested Host that is not "
                        "127.0.0.1, localhost, ::1 or --host is refused: DNS rebinding); repeatable")
    u.add_argument("--cache", help="cache folder (default: KFORGE_CACHE_DIR or ~/.cache/kernel_forge)")
    u.add_argument("--jobs", help="job folders (default: KFORGE_JOBS_DIR, else CACHE/jobs)")
    u.add_argument("--stats", help="the last run's table: a `kforge warmup --json` or `kforge run "
                   "--json` file (for the overview)")
    u.set_defaults(fn=cmd_ui)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
