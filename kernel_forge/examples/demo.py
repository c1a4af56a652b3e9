"""The Kernel Forge demo: a small model, tuned while it runs, then served by forged kernels.

    python -m kernel_forge.examples.demo [--iterations 20] [--device cpu|cuda]

1. Runs a small MLP block (layer_norm, GELU, softmax, residual add) with the plugin loaded; the
   plugin records which signatures are hot.
2. Tunes each hot signature the way KFORGE_TUNE=1 does in the background: the plugin copies real
   calls, a job folder is written, and the forge worker process searches the builtin templates
   (MCTS), verifies every candidate against eager and inserts winners into the cache.
3. Runs the model again with eager and with the plugin side by side, and prints which ops were
   served by forged kernels and the measured speedups (kept eager where no kernel won).

It uses a fresh cache folder (printed) unless KFORGE_CACHE_DIR is set.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

if "KFORGE_CACHE_DIR" not in os.environ:
    # The plugin reads it once, when it loads, and `python -m` has loaded it already (the package
    # is imported first): start again with a fresh cache folder.
    os.environ["KFORGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="kforge-demo-cache-")
    os.execv(sys.executable, [sys.executable, "-m", "kernel_forge.examples.demo", *sys.argv[1:]])

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kernel_forge as kf  # noqa: E402
from kernel_forge import _jobs, _tuner  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d: int, classes: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 2 * d)
        self.down = torch.nn.Linear(2 * d, d)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        h = F.gelu(self.up(self.norm(x)), approximate="tanh")
        x = x + self.down(h)
        return torch.softmax(self.head(x), dim=-1)


def model_ms(model, x, reps: int, device) -> float:
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=20, help="search iterations per signature")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--dim", type=int, default=512)
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = Block(args.dim, 1000).to(device).eval()
    x = torch.randn(args.batch, args.dim, device=device)
    print(f"kernel_forge {kf.__version__}, torch {torch.__version__}, device {device}, "
          f"cache {kf.cache_dir()}")

    with torch.inference_mode():
        kf.reset_stats()
        kf.set_recording(True)  # every op intercepted and counted, as kforge run does
        for _ in range(10):
            model(x)
        kf.set_recording(False)
        hot = _tuner.hot_candidates(kf.stats(), min_calls=5, min_share=0.02, skip=set())
        print(f"\n1. recorded: {len(hot)} hot intercepted signatures")
        for r in hot:
            print(f"   {100 * r['share']:5.1f}%  {r['signature']}")

        print(f"\n2. tuning ({args.iterations} candidates each, in the forge worker process)")
        results = {}
        search = {"iterations": args.iterations, "proposer": "builtin", "cache_dir": kf.cache_dir()}
        for r in hot:
            key = r["key"]
            _tuner.request_captures(key, 3)
            model(x)  # the plugin copies this real call's arguments
            caps = _tuner.take_captures(key, _tuner.n_tensor_args(key))
            try:
                with _jobs.bypass():
                    job = _tuner.write_job_from_captures(key, caps, search)
                bar = _jobs.ProgressBar(r["signature"])
                res = _jobs.run_worker(job, on_progress=bar)
                bar.close()
            except kf.KernelForgeError as e:
                res = {"status": "not tuned", "detail": str(e)}
            results[key] = res
        kf.reload_cache()

        print("\n3. eager vs plugin, same process, side by side")
        kf.disable()
        ref = model(x)
        kf.enable()
        out = model(x)  # first use of each served kernel: checked against eager here
        kf.reset_stats()
        eager, plugin = [], []
        for _ in range(5):
            kf.disable()
            eager.append(model_ms(model, x, 5, device))
            kf.enable()
            plugin.append(model_ms(model, x, 5, device))
        stats = {r["key"]: r for r in kf.stats()}

    print(f"\n{'op':22s} {'status':18s} {'eager us':>9s} {'kernel us':>9s} {'speedup':>8s} "
          f"{'served':>7s}  signature")
    for r in hot:
        res = results[r["key"]]
        st = stats.get(r["key"], {})
        k_us = f"{res['best_us']:.1f}" if res.get("best_us") else "-"
        e_us = f"{res['eager_us']:.1f}" if res.get("eager_us") else "-"
        sp = f"{res['speedup']:.2f}x" if res.get("speedup") else "-"
        print(f"{r['op'].split('::')[-1]:22s} {res['status'][:18]:18s} {e_us:>9s} {k_us:>9s} "
              f"{sp:>8s} {st.get('served', 0):7d}  {r['signature'][:60]}")
    served = sorted({r["op"] for r in stats.values() if r["served"]})
    e, p = statistics.median(eager), statistics.median(plugin)
    print(f"\nserved by forged kernels: {', '.join(served) if served else 'nothing (eager kept)'}")
    print(f"model: eager {e:.3f} ms, plugin {p:.3f} ms per forward: {e / p:.2f}x "
          f"(median of 5 alternating rounds; timings on a shared machine are noisy)")
    diff = (out.float() - ref.float()).abs().max().item()
    print(f"output vs eager: max abs diff {diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
