"""python prof.py SCRIPT ARGS...: run a zoo script under torch.profiler; print the top CUDA kernels
and the totals (device busy time vs wall), to tell more GPU work from idle gaps."""
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, __import__("os").path.dirname(script))
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    runpy.run_path(script, run_name="__main__")
ka = p.key_averages()
print(ka.table(sort_by="self_cuda_time_total", row_limit=22, max_name_column_width=70))
