import os, sys, time, statistics
sys.argv = ["model.py", sys.argv[1]]
os.environ["NU_N"] = "0"
import kernel_forge as kf
import runpy
g = runpy.run_path("model.py", run_name="nu")
fwd = g["fwd"]
for i in range(100): fwd()
for phase in ["on", "off", "on", "off", "on", "off"]:
    (kf.enable if phase == "on" else kf.disable)()
    ts = []
    for i in range(60):
        t = time.perf_counter(); fwd(); ts.append(1e3 * (time.perf_counter() - t))
    print(phase, round(statistics.median(ts), 3), round(min(ts), 3))
