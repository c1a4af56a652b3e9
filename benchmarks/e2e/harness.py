"""What the e2e scripts share: the workload options, building a workload, one forward, timing.

Building the model, making its inputs (a decode workload's prefill included) and a decode step's
cache copy are set-up, not the workload: when the plugin is loaded they run with this thread
bypassing it, so that they are neither recorded (and tuned) nor served.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import statistics
import sys
import time

import torch

import workloads

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _find_kernel_forge():
    """Run from a checkout where the package is not installed: use the repository's own (built
    in place), here and in child processes."""
    if importlib.util.find_spec("kernel_forge") is None:
        sys.path.insert(0, ROOT)
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = ROOT + (os.pathsep + old if old else "")


_find_kernel_forge()

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def add_workload_args(p):
    p.add_argument("model", choices=workloads.names())
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="cuda or cpu (default: cuda when available)")
    p.add_argument("--tiny", action="store_true", help="drastically smaller sizes (CPU tests)")
    p.add_argument("--layers", type=int, help="blocks/layers to build (default: the workload's)")
    p.add_argument("--dtype", choices=sorted(DTYPES),
                   help="default: the workload's on CUDA (fp16/bf16), f32 on CPU")


def workload_argv(a) -> list[str]:
    """The same workload options as command-line arguments, for child processes."""
    argv = [a.model, "--device", a.device]
    if a.tiny:
        argv.append("--tiny")
    if a.layers:
        argv += ["--layers", str(a.layers)]
    if a.dtype:
        argv += ["--dtype", a.dtype]
    return argv


def quiet():
    """This thread's ATen calls skip the plugin, when it is loaded (set-up, not the workload)."""
    if "kernel_forge" not in sys.modules:
        return contextlib.nullcontext()
    return importlib.import_module("kernel_forge._jobs").bypass()


class Setup:
    """A built workload: model, stored inputs, one forward."""

    def __init__(self, a):
        self.wl = workloads.get(a.model)
        missing = self.wl.missing()
        if missing:
            raise SystemExit(f"{a.model} needs {', '.join(missing)}, which is not installed")
        if a.device.startswith("cuda") and not torch.cuda.is_available():
            raise SystemExit(f"--device {a.device}: no CUDA device is available")
        self.device = torch.device(a.device)
        self.dtype = DTYPES[a.dtype] if a.dtype else (
            self.wl.dtype if self.device.type == "cuda" else torch.float32)
        torch.manual_seed(0)
        with quiet():
            self.model, make_inputs = self.wl.build(self.device, self.dtype, tiny=a.tiny,
                                                    layers=a.layers)
            with torch.inference_mode():
                self.inputs = make_inputs()
        self.sync()

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype, str(self.dtype))

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def call_inputs(self):
        if self.wl.reset is None:
            return self.inputs
        with quiet():
            return self.wl.reset(self.inputs)

    def forward(self, model=None):
        with torch.inference_mode():
            return self.wl.forward(self.model if model is None else model, self.call_inputs())

    def time_ms(self, iters: int, model=None) -> list[float]:
        """Per forward: CUDA-event time on CUDA, wall time on the host. Each forward starts on
        an idle device, so host-side costs (the plugin's dispatch included) are in the time.
        self.host_ms: per forward, the host's time to issue it (on CUDA, until its last launch
        returns): close to the CUDA-event time, the forward is bound by the host, not the GPU."""
        model = self.model if model is None else model
        out = []
        self.host_ms = []
        with torch.inference_mode():
            for _ in range(iters):
                inputs = self.call_inputs()
                self.sync()
                if self.device.type == "cuda":
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    t0 = time.perf_counter()
                    s.record()
                    self.wl.forward(model, inputs)
                    e.record()
                    self.host_ms.append(1e3 * (time.perf_counter() - t0))
                    e.synchronize()
                    out.append(s.elapsed_time(e))
                else:
                    t0 = time.perf_counter()
                    self.wl.forward(model, inputs)
                    out.append(1e3 * (time.perf_counter() - t0))
                    self.host_ms.append(out[-1])
        return out


def median(xs):
    return statistics.median(xs) if xs else None
