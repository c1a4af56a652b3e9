"""A small latent-diffusion UNet written with plain torch.nn (as users write their own): channels
128/256/512, two ResNet blocks per level (GroupNorm 32 + SiLU + 3x3 conv, timestep embedding
added), self-attention at 32x32 and 16x16, skip connections concatenated; one denoising step on
a batch of 8 latents 4x64x64 (512x512 images), fp16 (random weights)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import _zoo

FAMILY = "diffusion"


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.norm1 = nn.GroupNorm(32, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(temb, cout)
        self.norm2 = nn.GroupNorm(32, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(emb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class Attention(nn.Module):
    def __init__(self, c, heads=8):
        super().__init__()
        self.heads = heads
        self.norm = nn.GroupNorm(32, c)
        self.qkv = nn.Linear(c, 3 * c)
        self.out = nn.Linear(c, c)

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.norm(x).flatten(2).transpose(1, 2)  # [b, hw, c]
        q, k, v = self.qkv(t).view(b, h * w, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, h * w, c)
        return x + self.out(o).transpose(1, 2).reshape(b, c, h, w)


class UNet(nn.Module):
    def __init__(self, chans=(128, 256, 512), attn=(False, True, True), cin=4):
        super().__init__()
        self.c0 = chans[0]
        temb = 4 * chans[0]
        self.time = nn.Sequential(nn.Linear(chans[0], temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(cin, chans[0], 3, padding=1)
        self.down, skips, c = nn.ModuleList(), [chans[0]], chans[0]
        for i, (co, at) in enumerate(zip(chans, attn)):
            for _ in range(2):
                self.down.append(nn.ModuleList([ResBlock(c, co, temb), Attention(co) if at else nn.Identity()]))
                c = co
                skips.append(c)
            if i < len(chans) - 1:
                self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                skips.append(c)
        self.mid = nn.ModuleList([ResBlock(c, c, temb), Attention(c), ResBlock(c, c, temb)])
        self.up = nn.ModuleList()
        for i, (co, at) in reversed(list(enumerate(zip(chans, attn)))):
            for _ in range(3):
                self.up.append(nn.ModuleList([ResBlock(c + skips.pop(), co, temb),
                                              Attention(co) if at else nn.Identity()]))
                c = co
            if i > 0:
                self.up.append(nn.Conv2d(c, c, 3, padding=1))  # after a nearest x2 upsampling
        self.norm_out = nn.GroupNorm(32, c)
        self.conv_out = nn.Conv2d(c, cin, 3, padding=1)

    def embed(self, t):
        half = self.c0 // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t):
        emb = self.time(self.embed(t).to(x.dtype))
        h = self.conv_in(x)
        hs = [h]
        for blk in self.down:
            if isinstance(blk, nn.Conv2d):
                h = blk(h)
            else:
                h = blk[1](blk[0](h, emb))
            hs.append(h)
        h = self.mid[2](self.mid[1](self.mid[0](h, emb)), emb)
        for blk in self.up:
            if isinstance(blk, nn.Conv2d):
                h = blk(F.interpolate(h, scale_factor=2.0, mode="nearest"))
            else:
                h = blk[1](blk[0](torch.cat([h, hs.pop()], dim=1), emb))
        return self.conv_out(F.silu(self.norm_out(h)))


a = _zoo.parse(__doc__, dtype="f16", iters=30)
chans, batch, size = ((32, 64), 2, 16) if a.tiny else ((128, 256, 512), 8, 64)
model = UNet(chans=chans, attn=(False, True, True)[:len(chans)]).eval()
model = model.to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
latents = torch.randn(batch, 4, size, size, generator=g).to(a.device, a.dtype)
timesteps = torch.randint(0, 1000, (batch,), generator=g).to(a.device)
model = _zoo.maybe_compile(model, a)
_zoo.bench("unet", lambda: model(latents, timesteps), a, family=FAMILY, source="torch.nn",
           batch=batch, shape=[batch, 4, size, size], channels=list(chans))
