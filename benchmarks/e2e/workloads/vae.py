"""The SD3.5 VAE decoder, built as an equivalent of diffusers' Decoder from its published config,
with random weights.

Config (SD3.5 `vae/config.json`): latent_channels 16, block_out_channels [128, 256, 512, 512],
layers_per_block 2 (the decoder has 3 resnets per up block), GroupNorm 32 groups eps 1e-6 + SiLU
+ conv3x3 resnet blocks, a mid block with one single-head self-attention, nearest 2x upsampling
+ conv3x3. A 128x128 latent (1024x1024 image) is too big for a benchmark round: the default is a
64x64 latent -> 512x512 image, batch 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import Workload


@dataclass(frozen=True)
class Config:
    latent_channels: int = 16
    channels: tuple = (128, 256, 512, 512)
    layers_per_block: int = 2
    groups: int = 32
    latent: int = 64
    batch: int = 1


SD35 = Config()
TINY = Config(channels=(32, 32, 64, 64), layers_per_block=1, latent=8)


def group_norm(c, groups):
    return nn.GroupNorm(groups, c, eps=1e-6)


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.norm1, self.conv1 = group_norm(cin, groups), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = group_norm(cout, groups), nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return (self.shortcut(x) if self.shortcut is not None else x) + h


class AttnBlock(nn.Module):
    """The mid block's attention: one head over all H*W positions, GroupNorm first, residual."""

    def __init__(self, c, groups):
        super().__init__()
        self.norm = group_norm(c, groups)
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(c, c) for _ in range(4))

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.norm(x).view(b, c, h * w).transpose(1, 2)
        q, k, v = (p(t).unsqueeze(1) for p in (self.to_q, self.to_k, self.to_v))
        o = F.scaled_dot_product_attention(q, k, v).squeeze(1)
        return x + self.to_out(o).transpose(1, 2).reshape(b, c, h, w)


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Decoder(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        ch, g = list(reversed(c.channels)), c.groups
        self.conv_in = nn.Conv2d(c.latent_channels, ch[0], 3, padding=1)
        self.mid = nn.Sequential(ResnetBlock(ch[0], ch[0], g), AttnBlock(ch[0], g),
                                 ResnetBlock(ch[0], ch[0], g))
        ups, prev = [], ch[0]
        for i, out in enumerate(ch):
            layers = [ResnetBlock(prev if j == 0 else out, out, g)
                      for j in range(c.layers_per_block + 1)]
            if i < len(ch) - 1:
                layers.append(Upsample(out))
            ups.append(nn.Sequential(*layers))
            prev = out
        self.up = nn.Sequential(*ups)
        self.norm_out = group_norm(ch[-1], g)
        self.conv_out = nn.Conv2d(ch[-1], 3, 3, padding=1)

    def forward(self, z):
        x = self.up(self.mid(self.conv_in(z)))
        return self.conv_out(F.silu(self.norm_out(x)))


def build(device, dtype, tiny=False, layers=None):
    if layers:
        raise ValueError("vae has no --layers: it is always the whole decoder")
    c = TINY if tiny else SD35
    model = Decoder(c).to(device=device, dtype=dtype).eval()

    def make_inputs():
        z = torch.randn(c.batch, c.latent_channels, c.latent, c.latent,
                        generator=torch.Generator().manual_seed(1))
        return z.to(device=device, dtype=dtype)

    return model, make_inputs


def forward(model, z):
    return model(z)


WORKLOAD = Workload(
    name="vae",
    summary="SD3.5 VAE decoder (latent 16 ch, blocks [128,256,512,512], 3 resnets per up block, "
            "mid attention), batch 1, 64x64 latent -> 512x512 image",
    dtype=torch.bfloat16, build=build, forward=forward, tolerance=5e-2)
