"""A fleet on one machine: N processes run the same small model with KFORGE_TUNE=1, each with its
own empty local cache, sharing one Redis (a redis-server started here on 127.0.0.1). Reports the
total search time (the sum of the forge worker's wall time over every process) next to one
process tuning alone, how many searches ran, and whether every process serves every winner.

  python3 benchmarks/fleet_sim.py [--n 8] [--device cpu|cuda] [--iterations 6] [--secs 240]
                                  [--out FILE.md]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The model: three hot signatures with host and CUDA templates (softmax, layer norm, relu).
MODEL = r"""
import json, sys, time, torch, kernel_forge as kf
from kernel_forge import _tuner
dev, secs = sys.argv[1], float(sys.argv[2])
torch.manual_seed(0)
x = torch.randn(352, 1408, device=dev)
w, b = torch.randn(1408, device=dev), torch.randn(1408, device=dev)
def model(x):
    return (torch.softmax(x, -1), torch.nn.functional.layer_norm(x, (1408,), w, b), torch.relu(x))
OPS = ("aten::_softmax", "aten::native_layer_norm", "aten::relu")
t0 = time.time(); all_at = None
while time.time() - t0 < secs:
    model(x)
    if dev == "cuda":
        torch.cuda.synchronize()
    time.sleep(0.01)
    tuner = _tuner._online
    rows = [r for r in kf.stats() if r["op"] in OPS]
    if tuner and rows and all(r["has_kernel"] or r["key"] in tuner.done for r in rows) \
            and not tuner.busy:
        all_at = all_at or time.time() - t0
        if all(r["served"] for r in rows if r["has_kernel"]) and time.time() - t0 > all_at + 1:
            break
res = _tuner._online.results if _tuner._online else []
rows = [r for r in kf.stats() if r["op"] in OPS]
if all_at is None or time.time() - t0 >= secs:  # not done in time: say where the tuner was
    import faulthandler
    print("not done: " + json.dumps([(r["op"], r["has_kernel"], r["served"],
          r["key"] in (_tuner._online.done if _tuner._online else ())) for r in rows]),
          file=sys.stderr)
    faulthandler.dump_traceback(all_threads=True)
print("FLEET " + json.dumps({
    "searches": [{"op": r["op"], "status": r["status"], "wall_s": r.get("wall_s", 0.0)} for r in res],
    "served": sorted(r["op"] for r in rows if r["served"]),
    "kernels": sorted(r["op"] for r in rows if r["has_kernel"]),
    "done_s": round(time.time() - t0, 2)}), flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_fleet(n: int, url: str, prefix: str, work: str, args) -> tuple[list[dict], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    env.update({"KFORGE_TUNE": "1", "KFORGE_TUNE_ITERATIONS": str(args.iterations),
                "KFORGE_TUNE_INTERVAL": "0.5", "KFORGE_RELOAD_MS": "200",
                "KFORGE_REMOTE_CACHE": url, "KFORGE_REMOTE_PREFIX": prefix,
                "KFORGE_REMOTE_POLL": "0.5", "OMP_NUM_THREADS": "1", "KFORGE_LOG": "info",
                "PYTHONPATH": ROOT + os.pathsep + env.get("PYTHONPATH", "")})
    procs = []
    t0 = time.monotonic()
    for i in range(n):
        e = dict(env, KFORGE_CACHE_DIR=os.path.join(work, f"{prefix}-{i}"))
        procs.append(subprocess.Popen([sys.executable, "-c", MODEL, args.device, str(args.secs)],
                                      env=e, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    out = []
    for p in procs:
        so, se = p.communicate(timeout=args.secs + 120)
        if p.returncode != 0 or "FLEET " not in so:
            raise SystemExit(f"a process failed (exit {p.returncode}):\n{se[-3000:]}")
        out.append(json.loads(so.split("FLEET ")[-1]))
        if args.logs:
            with open(os.path.join(args.logs, f"{prefix}-{len(out) - 1}.log"), "w") as f:
                f.write(se)
    return out, time.monotonic() - t0


def summary(name: str, res: list[dict], wall: float) -> dict:
    searches = [s for r in res for s in r["searches"]]
    winners = sorted({op for r in res for op in r["kernels"]})
    return {"name": name, "processes": len(res), "searches": len(searches),
            "search_s": sum(s["wall_s"] for s in searches),
            "inserted": sum(s["status"] == "inserted" for s in searches),
            "winners": winners,
            "all_serve_winners": all(set(winners) <= set(r["served"]) for r in res),
            "done_s": max(r["done_s"] for r in res), "wall_s": wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--secs", type=float, default=240)
    ap.add_argument("--out", help="write the report (markdown) here too")
    ap.add_argument("--logs", help="a folder for each process's log (KFORGE_LOG=info)")
    args = ap.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("needs redis-server (apt-get install redis-server)")
    load = os.getloadavg()
    work = tempfile.mkdtemp(prefix="kforge-fleet-")
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save",
                            "", "--appendonly", "no", "--dir", work],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        time.sleep(0.5)
        solo = summary("1 process", *run_fleet(1, url, "solo", work, args))
        fleet_res, fleet_wall = run_fleet(args.n, url, "fleet", work, args)
        fleet = summary(f"{args.n} processes, one Redis", fleet_res, fleet_wall)
    finally:
        srv.terminate()
        srv.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    lines = [f"# Fleet simulation ({args.device}, {time.strftime('%Y-%m-%d')})", "",
             f"`python3 benchmarks/fleet_sim.py --n {args.n} --device {args.device} "
             f"--iterations {args.iterations} --secs {args.secs:g}`: each process runs the same "
             "model (softmax, layer_norm, relu on f32[352,1408]) with KFORGE_TUNE=1, its own "
             "empty cache folder, and one redis-server; search time = sum of the forge "
             "worker's wall time over all processes.", "",
             "| run | processes | searches | inserted | total search s | winners | every process serves them | last process done s |",
             "|---|---|---|---|---|---|---|---|"]
    for s in (solo, fleet):
        lines.append(f"| {s['name']} | {s['processes']} | {s['searches']} | {s['inserted']} | "
                     f"{s['search_s']:.2f} | {', '.join(s['winners']) or '-'} | "
                     f"{'yes' if s['all_serve_winners'] else 'NO'} | {s['done_s']:.1f} |")
    lines += ["", f"fleet / solo total search time: {fleet['search_s'] / max(solo['search_s'], 1e-9):.2f}x; "
              f"searches {fleet['searches']} vs {solo['searches']} (without the fleet cache: "
              f"{args.n}x the searches). Machine: {os.cpu_count()} CPUs, load average "
              f"{load[0]:.1f} before the runs; the fleet's searches run at the same time as "
              f"each other and as {args.n} model processes, so each one's wall time grows with "
              "the contention: the number of searches is the fleet-wide cost that does not.", "",
              "Per process (fleet run): searches it ran, ops it serves, seconds until done:", ""]
    for i, r in enumerate(fleet_res):
        lines.append(f"- process {i}: {[(s['op'], s['status'], round(s['wall_s'], 2)) for s in r['searches']]}"
                     f"; serves {r['served']}; {r['done_s']} s")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if fleet["all_serve_winners"] and fleet["searches"] <= solo["searches"] else 1


if __name__ == "__main__":
    sys.exit(main())
