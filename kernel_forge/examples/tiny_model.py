"""A small transformer-style model on random data: the demo for `kforge run`.

    kforge run -m kernel_forge.examples.tiny_model      (or: kforge run path/to/tiny_model.py)
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.RMSNorm(dim)
        self.gate = nn.Linear(dim, 2 * dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyModel(nn.Module):
    def __init__(self, dim=256, heads=4, layers=4, vocab=1000):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        return torch.log_softmax(self.head(F.gelu(x)), dim=-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    torch.manual_seed(0)
    model = TinyModel().to(args.device).eval()
    ids = torch.randint(0, 1000, (args.batch, args.seq), device=args.device)
    with torch.inference_mode():
        model(ids)  # warm-up
        t0 = time.perf_counter()
        for _ in range(args.steps):
            out = model(ids)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / args.steps
    print(f"tiny model: {args.steps} steps, {1e3 * dt:.2f} ms/step on {args.device}, "
          f"output {tuple(out.shape)} checksum {out.float().sum().item():.4f}")


if __name__ == "__main__":
    main()
