"""`kforge`: the command line.

  kforge run [-m] SCRIPT [ARGS...]
                                run a Python script (or module) with the plugin loaded and recording on;
                                print the hottest signatures when it exits
  kforge doctor                 versions, devices, cache folder, intercept list, dependencies
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import runpy
import shutil
import subprocess
import sys


def _fmt_table(rows, headers, aligns):
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    def line(cells):
        return "  ".join(c.rjust(w) if a == ">" else c.ljust(w)
                         for c, w, a in zip(cells, widths, aligns)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _shorten(s, n):
    return s if len(s) <= n else s[: n - 3] + "..."


def stats_table(rows, top=20, width=90) -> str:
    """The hottest signatures as text. Rows marked '*' were seen by the observer only."""
    shown = rows[:top]
    body = []
    for r in shown:
        mark = "" if r["intercepted"] else "*"
        body.append([
            f"{100 * r['share']:5.1f}%", f"{r['time_ms']:.3f}", str(r["calls"]), str(r["served"]),
            str(r["fallback"]), (r["device"] or "-"), mark + _shorten(r["signature"], width),
        ])
    text = _fmt_table(body, ["share", "time ms", "calls", "served", "eager", "device", "signature"],
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


def cmd_run(args) -> int:
    import kernel_forge as kf

    script = args.script
    if args.module:
        sys.argv = [script] + args.args
    else:
        if not os.path.exists(script):
            print(f"kforge run: no such script: {script}", file=sys.stderr)
            return 2
        sys.argv = [script] + args.args
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    kf.set_recording(True)
    code = 0
    try:
        if args.module:
            runpy.run_module(script, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        kf.set_recording(False)
        rows = kf.stats()
        print("\nkforge: hottest signatures (intercepted rows: sampled time, per exact signature)")
        print(stats_table(rows, top=args.top))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
            print(f"kforge: stats written to {args.json}")
    return code


def _nvrtc_version():
    candidates = []
    try:
        import nvidia  # the CUDA wheels torch depends on
        for base in getattr(nvidia, "__path__", []):
            candidates += glob.glob(os.path.join(base, "cu*", "lib", "libnvrtc.so*"))
            candidates += glob.glob(os.path.join(base, "cuda_nvrtc", "lib", "libnvrtc.so*"))
    except ImportError:
        pass
    candidates += glob.glob("/usr/local/cuda/lib64/libnvrtc.so*")
    found = ctypes.util.find_library("nvrtc")
    if found:
        candidates.append(found)
    for path in candidates:
        if "builtins" in path or "alt" in path:
            continue
        try:
            lib = ctypes.CDLL(path)
            major, minor = ctypes.c_int(), ctypes.c_int()
            if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0:
                return f"{major.value}.{minor.value} ({path})"
        except OSError:
            continue
    return "not found"


def default_cache_dir() -> str:
    if os.environ.get("KFORGE_CACHE_DIR"):
        return os.environ["KFORGE_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kernel_forge")


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
    cache = default_cache_dir()
    print(f"cache folder    {cache} ({'exists' if os.path.isdir(cache) else 'not created yet'})")
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
          f"timing 1 call in {info['sample_every']}")
    if info["bad_ops"]:
        print(f"KFORGE_OPS      ignored entries: {info['bad_ops']}")
        ok = False
    if info["error"]:
        print(f"error           {info['error']}")
        ok = False
    print("\nintercept list:")
    rows = [[o["op"], o["keys"] or "-", o["skipped"]] for o in info["ops"]]
    print(_fmt_table(rows, ["op", "keys", "not intercepted on"], ["<", "<", "<"]))
    return 0 if ok else 1


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
    d = sub.add_parser("doctor", help="versions, devices, cache folder, intercept list")
    d.set_defaults(fn=cmd_doctor)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
