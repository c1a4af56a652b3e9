import sys, time, statistics
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
import torch, kernel_forge as kf
from model import model, x, run
ARMS = {"all": (kf.enable, kf.enable_chains), "ops": (kf.enable, kf.disable_chains), "none": (kf.disable, kf.enable_chains)}
t = {a: [] for a in ARMS}
run(5)
for rnd in range(15):
    for a in ARMS:
        for f in ARMS[a]: f()
        run(2)
        ts = []
        for _ in range(20):
            t0 = time.perf_counter(); run(1); ts.append(time.perf_counter() - t0)
        t[a].append(min(ts) * 1e6)
kf.enable(); kf.enable_chains()
for a in ARMS: print(a, "%.1f us a forward" % statistics.median(t[a]))
for e in kf.chain_entries(): print(e["ops"], e["state"], e["heads"], e["completed"], e.get("kernel_us"), e.get("members_us"))
print([(r["op"], r["calls"], r["served"]) for r in kf.stats()][:8])
