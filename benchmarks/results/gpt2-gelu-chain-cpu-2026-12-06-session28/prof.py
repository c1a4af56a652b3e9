import sys, torch
from torch.profiler import profile, ProfilerActivity
sys.argv = ["x", "--plugin"]
exec(open("/tmp/g2m/gpt2m.py").read())
import kernel_forge as kf
with torch.inference_mode():
    for side in ("on", "off"):
        (kf.enable if side == "on" else kf.disable)()
        for _ in range(3): fwd()
        with profile(activities=[ProfilerActivity.CPU]) as p:
            for _ in range(10): fwd()
        print("==", side)
        print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=40))
