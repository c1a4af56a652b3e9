"""Per-job time breakdown of a warm-up's job folders: setup before node 0, compile, eval, tail."""
import glob, json, os, sys
root = sys.argv[1]
tot = {"wall": 0, "setup": 0, "compile": 0, "eval": 0, "tail": 0}
print(f"{'job':52} {'n':>3} {'wall':>6} {'setup':>6} {'comp':>6} {'eval':>6} {'other':>6} {'tail':>6} {'memchk':>6}")
for d in sorted(glob.glob(os.path.join(root, "*"))):
    try:
        res = json.load(open(os.path.join(d, "result.json")))
        tree = json.load(open(os.path.join(d, "tree.json")))
    except Exception:
        continue
    nodes = tree.get("nodes", [])
    wall = res.get("wall_s", 0)
    if not nodes:
        print(f"{os.path.basename(d)[16:68]:52} {0:>3} {wall:6.2f}"); continue
    c = sum(n.get("compile_s", 0) for n in nodes); e = sum(n.get("eval_s", 0) for n in nodes)
    mc = sum((n.get("memcheck") or {}).get("seconds", 0) for n in nodes)
    n0 = nodes[0]
    setup = n0["elapsed_s"] - n0.get("compile_s", 0) - n0.get("eval_s", 0)
    last = max(n["elapsed_s"] for n in nodes)
    other = last - setup - c - e
    tail = wall - last
    for k, v in (("wall", wall), ("setup", setup), ("compile", c), ("eval", e), ("tail", tail)):
        tot[k] += v
    print(f"{os.path.basename(d)[16:68]:52} {len(nodes):3d} {wall:6.2f} {setup:6.2f} {c:6.2f} {e:6.2f} {other:6.2f} {tail:6.2f} {mc:6.2f}")
print("total", {k: round(v, 2) for k, v in tot.items()})
