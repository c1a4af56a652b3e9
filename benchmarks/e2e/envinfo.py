"""Where a result was measured: device, driver, versions, date."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cmd(args):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    out = p.stdout.strip()
    return out.splitlines()[0] if p.returncode == 0 and out else None


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def environment(device: torch.device) -> dict:
    import kernel_forge

    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
           "kernel_forge": kernel_forge.__version__, "host": platform.node(), "cpu": _cpu_name(),
           "cpu_count": os.cpu_count(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "driver": _cmd(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
           "commit": _cmd(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["gpu_capability"] = "sm_%d%d" % torch.cuda.get_device_capability(device)
    for mod in ("transformers", "torchvision"):
        if mod in sys.modules:
            env[mod] = getattr(sys.modules[mod], "__version__", "?")
    return env
