import os, sys, ctypes
NAME = sys.argv[1]; MODE = sys.argv[2]; sys.argv = ["model.py", NAME]
os.environ["NU_N"] = "0"
if MODE != "none":
    import kernel_forge as kf
import runpy
cg = ctypes.CDLL("/tmp/nu5/libcg.so")
g = runpy.run_path("model.py", run_name="nu")
if MODE == "off": kf.disable()
fwd = g["fwd"]
for _ in range(int(os.environ.get("WARM", "40"))): fwd()
cg.cg_start()
for _ in range(10): fwd()
cg.cg_stop()
