"""ResNet-50 inference (torchvision, random weights), batch 64, fp16, channels_last, on CUDA.

    kforge run benchmarks/resnet50.py [--iters 20]     (hot signatures)
    python benchmarks/resnet50.py [--plugin]           (timing with / without the plugin)
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
    args = p.parse_args()
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


if __name__ == "__main__":
    main()
