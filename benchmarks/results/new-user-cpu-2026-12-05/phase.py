import os, sys, time, statistics, runpy
mode = sys.argv[2]
sys.argv = ["model.py", sys.argv[1]]
os.environ["NU_N"] = "0"
if mode != "E":
    import kernel_forge as kf
g = runpy.run_path("model.py", run_name="nu")
fwd = g["fwd"]
if mode == "D": kf.disable()
for i in range(100): fwd()
if mode == "D2": kf.disable()
import resource
if os.environ.get('READY'):
    open(os.environ['READY'], 'w').write(str(os.getpid())); time.sleep(2)
r0 = resource.getrusage(resource.RUSAGE_SELF)
ts = []
for i in range(int(os.environ.get("N", "180"))):
    t = time.perf_counter(); fwd(); ts.append(1e3 * (time.perf_counter() - t))
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(mode, round(statistics.median(ts), 3), round(min(ts), 3), 'minflt/fwd', (r1.ru_minflt - r0.ru_minflt) / int(os.environ.get("N", "180")), 'sys ms/fwd', round((r1.ru_stime - r0.ru_stime) * 1e3 / int(os.environ.get("N", "180")), 3), 'user ms/fwd', round((r1.ru_utime - r0.ru_utime) * 1e3 / int(os.environ.get("N", "180")), 3))
