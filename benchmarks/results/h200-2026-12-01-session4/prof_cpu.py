"""python prof_cpu.py SCRIPT ARGS...: a zoo script under torch.profiler (CPU only); the ops by self
CPU time, to see which ops' host time differs between eager and the plugin."""
import os
import runpy
import sys

from torch.profiler import ProfilerActivity, profile

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
with profile(activities=[ProfilerActivity.CPU]) as p:
    runpy.run_path(script, run_name="__main__")
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=60))
