"""Run a workload's forward a few times: the script `kforge warmup` records and captures.

    python benchmarks/e2e/forward.py MODEL [--iters N] [--tiny] [--device cuda|cpu] [--layers N]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_workload_args(p)
    p.add_argument("--iters", type=int, default=5, help="forwards to run (default 5)")
    a = p.parse_args()
    s = harness.Setup(a)
    t0 = time.perf_counter()
    for _ in range(a.iters):
        out = s.forward()
    s.sync()
    ms = 1e3 * (time.perf_counter() - t0) / max(a.iters, 1)
    print(f"{a.model} ({s.dtype_name}, {a.device}): {a.iters} forwards, {ms:.2f} ms each (host "
          f"wall), output {tuple(out.shape)}")


if __name__ == "__main__":
    main()
