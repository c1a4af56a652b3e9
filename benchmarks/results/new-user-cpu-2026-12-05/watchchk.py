import os, sys, runpy, ctypes
sys.argv = ["model.py", sys.argv[1]]
os.environ["NU_N"] = "0"
import kernel_forge as kf
from kernel_forge import _native
g = runpy.run_path("model.py", run_name="nu")
fwd = g["fwd"]
lib = _native.lib()
lib.kf_chain_thread_watched.restype = ctypes.c_int
print("before", lib.kf_chain_thread_watched())
for i in range(5):
    fwd(); print("after fwd", i, lib.kf_chain_thread_watched())
for i in range(100): fwd()
print("after 105", lib.kf_chain_thread_watched())
kf.disable(); fwd()
print("disabled, after a forward", lib.kf_chain_thread_watched())
