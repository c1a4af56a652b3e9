import os, sys, time, statistics
NAME = sys.argv[1]; sys.argv = ["model.py", NAME]
os.environ["NU_N"] = "0"
import kernel_forge as kf, runpy
g = runpy.run_path("model.py", run_name="nu")
fwd = g["fwd"]
for _ in range(30): fwd()
res = {"on": [], "off": []}
for i in range(40):
    for k in (("on", "off") if i % 2 == 0 else ("off", "on")):
        (kf.enable if k == "on" else kf.disable)()
        fwd()
        for _ in range(10):
            a = time.perf_counter(); fwd(); res[k].append(time.perf_counter() - a)
kf.enable()
print("off/on %.4f" % (statistics.median(res["off"]) / statistics.median(res["on"])), "on %.3f off %.3f" % (1e3*statistics.median(res["on"]), 1e3*statistics.median(res["off"])))
