"""An SD3.5-Medium-like MMDiT: the joint transformer blocks of Stable Diffusion 3.5 Medium, built
from its published config (no diffusers needed), with random weights.

SD3.5 Medium: hidden 1536 = 24 heads x 64, 24 joint blocks, the first 13 with a second
self-attention on the image tokens (MMDiT-X), the last one context-pre-only; adaLN-Zero
modulation from timestep + pooled text embedding, LayerNorm without affine, q/k RMSNorm, joint
attention over the concatenated image and text tokens, GELU-tanh MLP ratio 4. A 1024x1024 image is
a 16x128x128 latent, 4096 tokens of 2x2 patches; the text is 333 tokens (77 CLIP + 256 T5) of
width 4096; batch 2 (classifier-free guidance). One forward = one denoising step through the first
`layers` blocks (default 4) plus the patch embedding and the final layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import Workload


@dataclass(frozen=True)
class Config:
    dim: int = 1536
    heads: int = 24
    depth: int = 24          # blocks of the full model (decides which blocks are dual / pre-only)
    dual_blocks: int = 13    # MMDiT-X: blocks 0..12 have the extra image self-attention
    in_channels: int = 16
    patch: int = 2
    latent: int = 128        # 1024x1024 image / 8
    text_tokens: int = 333   # 77 CLIP + 256 T5
    joint_dim: int = 4096    # width of the text encoders' hidden states
    pooled_dim: int = 2048   # CLIP-L + CLIP-G pooled
    freq_dim: int = 256      # sinusoidal timestep embedding
    batch: int = 2
    blocks: int = 4


SD35_MEDIUM = Config()
TINY = Config(dim=64, heads=4, depth=2, dual_blocks=1, in_channels=4, latent=16, text_tokens=20,
              joint_dim=32, pooled_dim=24, freq_dim=32, blocks=2)


def modulate(x, shift, scale):
    return x * (1 + scale[:, None]) + shift[:, None]


class AdaLNZero(nn.Module):
    """LayerNorm without affine plus `chunks` per-channel vectors (shift/scale/gate) from the
    conditioning: 6 for a block, 9 with the second attention (SD35AdaLayerNormZeroX)."""

    def __init__(self, dim, chunks):
        super().__init__()
        self.chunks = chunks
        self.linear = nn.Linear(dim, chunks * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, emb):
        return self.norm(x), self.linear(F.silu(emb)).chunk(self.chunks, dim=1)


class AdaLNContinuous(nn.Module):
    """The final norm (and a context-pre-only block's context norm): scale and shift only."""

    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, 2 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, emb):
        scale, shift = self.linear(F.silu(emb)).chunk(2, dim=1)
        return modulate(self.norm(x), shift, scale)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, eps=1e-6)


class Attention(nn.Module):
    """Self-attention on the image tokens, joint with the text tokens when `context` is given
    (diffusers' JointAttnProcessor2_0: image tokens first, then text)."""

    def __init__(self, dim, heads, joint, context_out=True):
        super().__init__()
        self.heads = heads
        hd = dim // heads
        self.to_q, self.to_k, self.to_v = (nn.Linear(dim, dim) for _ in range(3))
        self.norm_q, self.norm_k = RMSNorm(hd), RMSNorm(hd)
        self.to_out = nn.Linear(dim, dim)
        if joint:
            self.add_q, self.add_k, self.add_v = (nn.Linear(dim, dim) for _ in range(3))
            self.norm_added_q, self.norm_added_k = RMSNorm(hd), RMSNorm(hd)
            self.to_add_out = nn.Linear(dim, dim) if context_out else None

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, -1).transpose(1, 2)

    def forward(self, x, ctx=None):
        q, k, v = self.norm_q(self.split(self.to_q(x))), self.norm_k(self.split(self.to_k(x))), \
            self.split(self.to_v(x))
        n = x.shape[1]
        if ctx is not None:
            q = torch.cat([q, self.norm_added_q(self.split(self.add_q(ctx)))], dim=2)
            k = torch.cat([k, self.norm_added_k(self.split(self.add_k(ctx)))], dim=2)
            v = torch.cat([v, self.split(self.add_v(ctx))], dim=2)
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
        if ctx is None:
            return self.to_out(o)
        out_ctx = self.to_add_out(o[:, n:]) if self.to_add_out is not None else None
        return self.to_out(o[:, :n]), out_ctx


class FeedForward(nn.Sequential):
    def __init__(self, dim):
        super().__init__(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                         nn.Linear(4 * dim, dim))


class JointBlock(nn.Module):
    """diffusers' JointTransformerBlock (SD3 / SD3.5), same order of operations."""

    def __init__(self, dim, heads, dual, context_pre_only):
        super().__init__()
        self.dual, self.pre_only = dual, context_pre_only
        self.norm1 = AdaLNZero(dim, 9 if dual else 6)
        self.norm1_context = AdaLNContinuous(dim) if context_pre_only else AdaLNZero(dim, 6)
        self.attn = Attention(dim, heads, joint=True, context_out=not context_pre_only)
        self.attn2 = Attention(dim, heads, joint=False) if dual else None
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim)
        if not context_pre_only:
            self.norm2_context = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
            self.ff_context = FeedForward(dim)

    def forward(self, x, ctx, temb):
        nx, m = self.norm1(x, temb)
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = m[:6]
        if self.pre_only:
            hc = self.norm1_context(ctx, temb)
        else:
            nc, c = self.norm1_context(ctx, temb)
            hc = modulate(nc, c[0], c[1])
        a, ac = self.attn(modulate(nx, shift_msa, scale_msa), hc)
        x = x + gate_msa[:, None] * a
        if self.dual:  # the second attention sees the same normalized input, its own modulation
            x = x + m[8][:, None] * self.attn2(modulate(nx, m[6], m[7]))
        x = x + gate_mlp[:, None] * self.ff(modulate(self.norm2(x), shift_mlp, scale_mlp))
        if self.pre_only:
            return x, None
        ctx = ctx + c[2][:, None] * ac
        ctx = ctx + c[5][:, None] * self.ff_context(modulate(self.norm2_context(ctx), c[3], c[4]))
        return x, ctx


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device)
                      / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)  # flip_sin_to_cos


class MMDiT(nn.Module):
    def __init__(self, c: Config, blocks: int):
        super().__init__()
        self.c = c
        n_img = (c.latent // c.patch) ** 2
        self.patch_embed = nn.Conv2d(c.in_channels, c.dim, c.patch, stride=c.patch)
        # SD3 adds fixed sin-cos position embeddings; the values do not change the cost
        self.register_buffer("pos", 0.02 * torch.randn(1, n_img, c.dim))
        self.context_embedder = nn.Linear(c.joint_dim, c.dim)
        self.time_mlp = nn.Sequential(nn.Linear(c.freq_dim, c.dim), nn.SiLU(),
                                      nn.Linear(c.dim, c.dim))
        self.text_mlp = nn.Sequential(nn.Linear(c.pooled_dim, c.dim), nn.SiLU(),
                                      nn.Linear(c.dim, c.dim))
        self.blocks = nn.ModuleList(
            JointBlock(c.dim, c.heads, dual=i < c.dual_blocks, context_pre_only=i == c.depth - 1)
            for i in range(blocks))
        self.norm_out = AdaLNContinuous(c.dim)
        self.proj_out = nn.Linear(c.dim, c.patch * c.patch * c.in_channels)

    def forward(self, latent, ctx, pooled, t):
        c, (b, ch, h, w) = self.c, latent.shape
        p = c.patch
        x = self.patch_embed(latent).flatten(2).transpose(1, 2) + self.pos
        temb = self.time_mlp(timestep_embedding(t, c.freq_dim).to(x.dtype)) + self.text_mlp(pooled)
        ctx = self.context_embedder(ctx)
        for blk in self.blocks:
            x, ctx = blk(x, ctx, temb)
        x = self.proj_out(self.norm_out(x, temb))
        return x.view(b, h // p, w // p, p, p, ch).permute(0, 5, 1, 3, 2, 4).reshape(b, ch, h, w)


def build(device, dtype, tiny=False, layers=None):
    c = TINY if tiny else SD35_MEDIUM
    blocks = layers or c.blocks
    if not 1 <= blocks <= c.depth:
        raise ValueError(f"mmdit: --layers must be 1..{c.depth}, not {blocks}")
    model = MMDiT(c, blocks).to(device=device, dtype=dtype).eval()

    def make_inputs():
        g = torch.Generator().manual_seed(1)
        shapes = [(c.batch, c.in_channels, c.latent, c.latent), (c.batch, c.text_tokens, c.joint_dim),
                  (c.batch, c.pooled_dim)]
        xs = [torch.randn(s, generator=g).to(device=device, dtype=dtype) for s in shapes]
        t = torch.full((c.batch,), 500.0, device=device)
        return (*xs, t)

    return model, make_inputs


def forward(model, inputs):
    return model(*inputs)


WORKLOAD = Workload(
    name="mmdit",
    summary="SD3.5-Medium joint transformer blocks (hidden 1536, 24x64 heads, dual attention), "
            "first 4 of 24 blocks, batch 2, 4096 image + 333 text tokens (1024x1024 image)",
    dtype=torch.bfloat16, build=build, forward=forward, tolerance=5e-2)
