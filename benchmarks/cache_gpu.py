"""Hand-written CUDA kernels added with kernel_forge.add_kernel and served in a model (H200).

    python benchmarks/cache_gpu.py [--quick]

1. add_kernel: softmax bf16 [4096, 151936] (last dim) and group_norm bf16 [4, 512, 128, 128],
   32 groups, from tests/fixtures/cuda/ (compiled by NVRTC, verified in a child process).
2. A model that calls both runs with the plugin: served counts, results vs eager.
3. The same model captured into a CUDA graph and replayed: same results.
4. Device time per call (CUDA events, median) eager vs served, and host time per call of the
   launch itself (served vs eager).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import kernel_forge as kf
from kernel_forge._verify import _once_us

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "tests", "fixtures", "cuda")


def fixture(name, defines):
    with open(os.path.join(FIX, name)) as f:
        src = f.read()
    prefix = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    return prefix + src


BF16_IN, BF16_OUT = "const __nv_bfloat16*", "__nv_bfloat16*"


class Model(torch.nn.Module):
    def __init__(self, c, groups):
        super().__init__()
        self.norm = torch.nn.GroupNorm(groups, c)

    def forward(self, x, logits):
        return F.silu(self.norm(x)), torch.softmax(logits, dim=-1)


def cuda_ms(fn, reps=20):
    """Median device time of fn (CUDA events), timed one run at a time as add_kernel's
    verification times it."""
    for _ in range(3):
        fn()
    return statistics.median(_once_us(fn, torch.device("cuda")) for _ in range(reps)) / 1e3


def host_us(fn, reps=200):
    fn()
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
        if i % 8 == 7:
            torch.cuda.synchronize()  # keep the launch queue short
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="small shapes (a smoke test)")
    args = p.parse_args()
    rows, cols = (64, 4096) if args.quick else (4096, 151936)
    n, c, hw, groups = (2, 64, 32 * 32, 8) if args.quick else (4, 512, 128 * 128, 32)
    torch.manual_seed(0)
    dev = "cuda"
    logits = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) * 3
    x = torch.randn(n, c, int(hw ** 0.5), int(hw ** 0.5), device=dev, dtype=torch.bfloat16)
    model = Model(c, groups).to(dev, torch.bfloat16).eval()
    with torch.no_grad():
        model.norm.weight.uniform_(0.5, 1.5)
        model.norm.bias.uniform_(-0.5, 0.5)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, cache {kf.cache_dir()}")

    # the launch records are the ones in the fixtures' header comments
    sm = kf.add_kernel("aten::_softmax", (logits, -1, False),
                       fixture("softmax_bf16_rows.cu", {"KF_ROWS": rows, "KF_COLS": cols, "KF_RCP": 1}),
                       {"entry": "kf_kernel", "grid": [rows, 1, 1], "block": [1024, 1, 1],
                        "smem": 229376, "args": [BF16_IN, BF16_OUT]},
                       allow_slower=args.quick)  # the smoke test's small shapes may not win
    print(f"softmax  added: {sm['signature']}\n         eager {sm['eager_us']:.1f} us, kernel "
          f"{sm['kernel_us']:.1f} us, speedup {sm['speedup']:.2f}x, max abs err {sm['max_abs_err']:.3g}")
    eps = 1e-5
    gn = kf.add_kernel("aten::native_group_norm",
                       (x, model.norm.weight, model.norm.bias, n, c, hw, groups, eps),
                       fixture("group_norm_bf16_nchw.cu",
                               {"KF_N": n, "KF_C": c, "KF_HW": hw, "KF_G": groups, "KF_EPS": eps}),
                       {"entry": "kf_kernel", "grid": [n * groups * 8, 1, 1], "block": [512, 1, 1],
                        "smem": 2 * (c // groups) * hw // 8,
                        "args": [BF16_IN, BF16_IN, BF16_IN, BF16_OUT, BF16_OUT, BF16_OUT]},
                       allow_slower=args.quick)
    print(f"groupnorm added: {gn['signature']}\n         eager {gn['eager_us']:.1f} us, kernel "
          f"{gn['kernel_us']:.1f} us, speedup {gn['speedup']:.2f}x, max abs err {gn['max_abs_err']:.3g}")

    with torch.no_grad():
        kf.reset_stats()
        y_norm, y_sm = model(x, logits)
        torch.cuda.synchronize()
        served = {r["op"]: r["served"] for r in kf.stats() if r["served"]}
        print("served in the model run:", served)
        assert served.get("aten::_softmax") == 1 and served.get("aten::native_group_norm") == 1, served
        kf.disable()
        e_norm, e_sm = model(x, logits)
        eager_ms = cuda_ms(lambda: model(x, logits))
        kf.enable()
        err_n = (y_norm.float() - e_norm.float()).abs().max().item()
        err_s = (y_sm.float() - e_sm.float()).abs().max().item()
        print(f"model vs eager: max abs err group_norm+silu {err_n:.3g}, softmax {err_s:.3g}")
        assert err_n < 5e-2 and err_s < 1e-2
        plugin_ms = cuda_ms(lambda: model(x, logits))
        print(f"model device time per forward: eager {eager_ms:.3f} ms, plugin {plugin_ms:.3f} ms, "
              f"speedup {eager_ms / plugin_ms:.2f}x")

        # CUDA graph with served kernels
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            model(x, logits)
        torch.cuda.current_stream().wait_stream(s)
        before = {r["op"]: r["served"] for r in kf.stats()}
        with torch.cuda.graph(g):
            g_norm, g_sm = model(x, logits)
        after = {r["op"]: r["served"] for r in kf.stats()}
        g.replay()
        torch.cuda.synchronize()
        same = torch.equal(g_norm, y_norm) and torch.equal(g_sm, y_sm)
        print(f"CUDA graph: captured {after.get('aten::_softmax', 0) - before.get('aten::_softmax', 0)} "
              f"served softmax, {after.get('aten::native_group_norm', 0) - before.get('aten::native_group_norm', 0)} "
              f"served group_norm; replay equals the served run: {same}")
        assert same

        # host time of the launch itself
        f_sm = lambda: torch.softmax(logits, dim=-1)  # noqa: E731
        served_host = host_us(f_sm)
        kf.disable()
        eager_host = host_us(f_sm)
        kf.enable()
        print(f"host time per softmax call (launch only, median): eager {eager_host:.1f} us, "
              f"served {served_host:.1f} us, extra {served_host - eager_host:+.1f} us")
    print("OK")


if __name__ == "__main__":
    sys.exit(main())
