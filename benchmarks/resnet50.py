"""ResNet-50 inference (torchvision, random weights), batch 64, fp16, channels_last, on CUDA.

    kforge run benchmarks/resnet50.py [--iters 20]     (hot signatures)
    python benchmarks/resnet50.py [--plugin]           (timing with / without the plugin)
    python benchmarks/resnet50.py --compare [--rounds 5] (eager vs plugin side by side, one process:
                                                         kernel_forge.disable()/enable() per round)
"""

import argparse
import statistics
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--plugin", action="store_true", help="import kernel_forge (no recording)")
    p.add_argument("--compare", action="store_true", help="eager vs plugin, alternating rounds")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    if args.compare:
        return compare(args)
    if args.plugin:
        import kernel_forge  # noqa: F401
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().half().eval()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
    times = []
    with torch.inference_mode():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            y = model(x)
            end.record()
            times.append((start, end))
        torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / args.iters
    med = statistics.median(s.elapsed_time(e) for s, e in times)
    print(f"resnet50 batch {args.batch} fp16 channels_last: median {med:.3f} ms/iter (CUDA events), "
          f"{1e3 * wall:.3f} ms/iter host wall, {args.iters} iters, "
          f"logits checksum {y.float().sum().item():.3f}")


def compare(args):
    import kernel_forge as kf

    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().half().eval()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)

    def run():
        ts = []
        for _ in range(args.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            model(x)
            e.record()
            ts.append((s, e))
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in ts)

    with torch.inference_mode():
        kf.disable()
        ref = model(x).float()
        kf.enable()
        out = model(x).float()  # first use of every served kernel: checked against eager here
        torch.cuda.synchronize()
        for _ in range(3):
            model(x)
        kf.reset_stats()
        eager, plugin = [], []
        for _ in range(args.rounds):
            kf.disable()
            eager.append(run())
            kf.enable()
            plugin.append(run())
    served = {}
    for r in kf.stats():
        if r["served"]:
            served[r["op"]] = served.get(r["op"], 0) + r["served"]
    e, p = statistics.median(eager), statistics.median(plugin)
    print(f"resnet50 batch {args.batch} fp16 channels_last, {args.rounds} alternating rounds of "
          f"{args.iters} iters (CUDA events, median): eager {e:.3f} ms, plugin {p:.3f} ms, "
          f"speedup {e / p:.3f}x")
    print(f"per round eager {[round(v, 3) for v in eager]} plugin {[round(v, 3) for v in plugin]}")
    print(f"served calls by op: {served}; cache entries: {len(kf.cache_entries())}")
    print(f"logits vs eager: max abs diff {(out - ref).abs().max().item():.4g} "
          f"(max |logit| {ref.abs().max().item():.4g})")


if __name__ == "__main__":
    main()
