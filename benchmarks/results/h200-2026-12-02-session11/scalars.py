import torch
s = 0.044715
for dev in (["cuda"] if torch.cuda.is_available() else []) + ["cpu"]:
  for dt in (torch.bfloat16, torch.float16):
    x = (torch.randn(1 << 20) * 100).to(dt).to(dev)
    sr = torch.tensor(s).to(dt).item()
    z32 = torch.tensor(s, dtype=torch.float32, device=dev)
    zc = torch.tensor(s, dtype=torch.float32)
    for name, f in [("mul", lambda x, c: x * c), ("scalar*x", lambda x, c: torch.mul(c, x) if torch.is_tensor(c) else c * x),
                    ("add", lambda x, c: x + c), ("sub", lambda x, c: x - c), ("div", lambda x, c: x / c),
                    ("rsub", lambda x, c: c - x), ("rdiv", lambda x, c: c / x)]:
        e = f(x, s).float()
        full = f(x.float(), s).to(dt).float(); rnd = f(x.float(), sr).to(dt).float()
        recip = (x.float() * (1 / s)).to(dt).float() if name == "div" else full
        r0 = f(x, z32).float(); r1 = f(x, zc).float() if dev == "cuda" else r0
        print(f"{dev} {str(dt)[6:]} {name:8s} full {(e != full).float().mean().item():.4f} rounded {(e != rnd).float().mean().item():.4f} recip {(e != recip).float().mean().item():.4f}"
              f" | 0-dim f32 same-dev vs full {(r0 != full).float().mean().item():.4f} rnd {(r0 != rnd).float().mean().item():.4f}; cpu 0-dim vs full {(r1 != full).float().mean().item():.4f}")
