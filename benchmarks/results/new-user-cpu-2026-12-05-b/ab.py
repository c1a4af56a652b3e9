import os, sys, time, torch
sys.argv = ["model.py", sys.argv[1]]
os.environ["NU_N"] = "0"
import kernel_forge as kf
import runpy
g = runpy.run_path("model.py", run_name="nu")
fwd = g["fwd"]
for _ in range(30): fwd()
def t(n=40):
    ts = []
    for _ in range(n):
        a = time.perf_counter(); fwd(); ts.append(time.perf_counter() - a)
    ts.sort(); return 1e3 * ts[len(ts) // 2]
res = {"on": [], "off": []}
for i in range(6):
    for k in (("on", "off") if i % 2 == 0 else ("off", "on")):
        (kf.enable if k == "on" else kf.disable)(); res[k].append(t())
kf.enable()
print({k: [round(x, 3) for x in v] for k, v in res.items()})
import statistics
print("off/on", statistics.median(res["off"]) / statistics.median(res["on"]))
