"""Extra time per call of intercept + signature + guard + fallback, on tiny CPU tensors.

Runs the same loop in child processes with no plugin (KFORGE_DISABLE=1: nothing registered),
with the plugin loaded and enabled, the same without timing samples (KFORGE_SAMPLE_EVERY huge),
and with the plugin loaded but switched off (kernel_forge.disable(): the boxed pass-through
only), alternating them several times so machine noise hits them alike, and reports medians and
the difference per call.

    python benchmarks/dispatch_overhead.py [--calls 20000] [--rounds 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, torch
mode = sys.argv[1]; calls = int(sys.argv[2])
torch.set_num_threads(1)
if mode != "none":  # "on", "on-unsampled", "off"
    import kernel_forge as kf
    if mode == "off":
        kf.disable()
x = torch.randn(8); y = torch.randn(8); m = torch.randn(4, 8)
cases = {
    "relu(f32[8])": lambda: torch.relu(x),
    "add(f32[8], f32[8])": lambda: torch.add(x, y),
    "mul(f32[8], 2.0)": lambda: x * 2.0,
    "softmax(f32[4,8])": lambda: torch.softmax(m, -1),
}
out = {}
for name, fn in cases.items():
    for _ in range(2000):
        fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    out[name] = best
print(json.dumps(out))
"""


def run(mode, calls):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    if mode == "none":
        env["KFORGE_DISABLE"] = "1"
    if mode == "on-unsampled":  # no timing samples after the first 3 calls
        env["KFORGE_SAMPLE_EVERY"] = str(1 << 20)
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(calls)], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", help="write the raw numbers here")
    args = p.parse_args()
    modes = ["none", "on", "off", "on-unsampled"]
    samples = {m: [] for m in modes}
    for _ in range(args.rounds):
        for m in modes:
            samples[m].append(run(m, args.calls))
    cases = list(samples["none"][0])
    med = {m: {c: statistics.median(s[c] for s in samples[m]) for c in cases} for m in modes}
    print(f"ns per call, median of {args.rounds} rounds x best of 5 x {args.calls} calls, "
          "1 thread, CPU")
    print(f"{'op':24} {'no plugin':>10} {'plugin on':>10} {'unsampled':>10} {'switched off':>13} "
          f"{'extra (on)':>11} {'ratio':>6}")
    for c in cases:
        n, on, off, uns = med["none"][c], med["on"][c], med["off"][c], med["on-unsampled"][c]
        print(f"{c:24} {n:10.0f} {on:10.0f} {uns:10.0f} {off:13.0f} {on - n:+11.0f} {on / n:6.2f}")
    print("per round (" + " / ".join(modes) + "):")
    for c in cases:
        print(f"  {c:24} " + "  ".join("/".join(f"{samples[m][i][c]:.0f}" for m in modes)
                                       for i in range(args.rounds)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"median_ns": med, "rounds": args.rounds, "calls": args.calls}, f, indent=1)


if __name__ == "__main__":
    main()
