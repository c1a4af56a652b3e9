"""Tile-walk variants of add -> layer_norm over a transposed stream, timed with CUDA events."""
import json, os, subprocess, sys
import numpy as np, torch, cupy
meta = json.load(open("v/meta.json"))
ONLY = [o for o in os.environ.get("ONLY", "").split(",") if o]
NCU = os.environ.get("NCU") == "1"
dev = torch.device("cuda")
def tt(Bn, Tn, Cn):  # the transposed layout: [B, T, C] with strides (T C, 1, T)
    return torch.randn(Bn, Cn, Tn, device=dev).to(torch.bfloat16).transpose(1, 2)
def timeit(fn, n=200):
    if NCU: fn(); torch.cuda.synchronize(); return 1.0
    for _ in range(20): fn()
    ts = []
    for _ in range(5):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(n): fn()
        b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / n)
    return float(np.median(ts))
def cubin(src, defs=()):
    out = src.replace(".cu", "") + "_".join(d.replace("-D", "").replace("=", "") for d in defs) + ".cubin"
    subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", out, src] + list(defs), check=True)
    return cupy.RawModule(path=out)
x = torch.empty(1 << 28, dtype=torch.bfloat16, device=dev); yy = torch.empty_like(x)
copy_us = timeit(lambda: yy.copy_(x), 50); copy_gbs = 4 * (1 << 28) / copy_us / 1e3
print(f"copy bandwidth {copy_gbs:.0f} GB/s"); del x, yy
res = {}
for cn, (Bn, Tn, Cn, h_t, eps) in meta["cases"].items():
    torch.manual_seed(0)
    x = tt(Bn, Tn, Cn); h = tt(Bn, Tn, Cn) if h_t else torch.randn(Bn, Tn, Cn, device=dev).to(torch.bfloat16)
    w = torch.randn(Cn, device=dev).to(torch.bfloat16); b = torch.randn(Cn, device=dev).to(torch.bfloat16)
    s_ref = x + h
    y_ref, m_ref, r_ref = torch.native_layer_norm(s_ref, [Cn], w, b, eps)
    nbytes = 4 * Bn * Tn * Cn * 2
    eager = timeit(lambda: torch.native_layer_norm(x + h, [Cn], w, b, eps))
    print(f"{cn}: eager {eager:.1f} us; roofline {nbytes / copy_gbs / 1e3:.1f} us")
    runs = [(k, f"v/{k}.cu", (), v["launch"]) for k, v in meta["variants"].items() if v["case"] == cn]
    for tr in (16, 32):
        for un in (2, 4, 8):
            smem = (tr * (Cn + 2) * 2 + 15) // 16 * 16
            L = {"entry": "k2", "grid": [(Bn * Tn + tr - 1) // tr, 1, 1], "block": [256, 1, 1], "smem": smem}
            runs.append((f"{cn}_k2_tr{tr}_u{un}", "k2.cu", (f"-DKB={Bn}", f"-DKT={Tn}", f"-DKC={Cn}", f"-DEPS={eps}f",
                                                          f"-DHT={h_t}", f"-DTR={tr}", f"-DUN={un}"), L))
    for name, src, defs, L in runs:
        if ONLY and name not in ONLY: continue
        try:
            fn = cubin(src, defs).get_function(L["entry"])
            if L["smem"] > 48 * 1024: fn.max_dynamic_shared_size_bytes = L["smem"]
            s = torch.empty_like(x); y = torch.empty(Bn, Tn, Cn, dtype=torch.bfloat16, device=dev)
            m = torch.empty(Bn, Tn, 1, device=dev); r = torch.empty_like(m)
            args = tuple(np.uint64(t.data_ptr()) for t in (x, h, w, b, s, y, m, r))
            go = lambda: fn(tuple(L["grid"]), tuple(L["block"]), args, shared_mem=L["smem"])
            go(); torch.cuda.synchronize()
            ok = (torch.equal(s, s_ref), (y.float() - y_ref.float()).abs().max().item(),
                  (m - m_ref).abs().max().item(), (r - r_ref).abs().max().item() / r_ref.abs().max().item())
            us = timeit(go)
            res[name] = us
            print(f"  {name:24s} {us:7.1f} us  {nbytes / us / 1e3:6.0f} GB/s ({100 * nbytes / us / 1e3 / copy_gbs:3.0f}%)  "
                  f"sum exact {ok[0]}, y {ok[1]:.3g}, mean {ok[2]:.3g}, rstd {ok[3]:.3g}")
        except Exception as e:
            print(f"  {name}: {type(e).__name__}: {str(e)[:300]}")
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "tile.json"), "w"), indent=1)
