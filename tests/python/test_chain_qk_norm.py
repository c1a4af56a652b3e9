"""Gemma's, Qwen 3's and OLMo 2's attention normalise q and k (`q_norm`, `k_norm`) before the
rotary embedding, so rotary's `q * cos` reads the norm chain's last output and joins that run,
while `-q2` and `cat(-q2, q1)` read views of it, which link to nothing there. The recorder
observes such a run again as two: the norm, then rotary from `q * cos`, where q is a head input
whose views link. `kforge warmup` with its default options tunes both; a fresh process serves
both, its output as eager's within bf16 rounding."""

import json

from conftest import run_python
from fixtures.chain_warmup import GEMMA_RMSNORM, SERVE_TAIL, served_by_row, warm_chains

MODEL = "import torch\n" + GEMMA_RMSNORM + """
def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)
class Attn(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q = torch.nn.Linear(d, d)
        self.q_norm = Norm(self.hd)
    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_norm(self.q(x).view(b, s, self.heads, self.hd)).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return (q * cos) + (rotate_half(q) * sin)
class Model(torch.nn.Module):
    def __init__(self, d=256, heads=4, layers=3):
        super().__init__()
        self.layers = torch.nn.ModuleList(Attn(d, heads) for _ in range(layers))
        self.hd = d // heads
    def forward(self, x):
        pos = torch.arange(x.shape[1], dtype=torch.float32)
        freqs = pos[:, None] / (10000 ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        emb = torch.cat((freqs, freqs), dim=-1)[None]
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        out = x
        for layer in self.layers:
            out = layer(out, cos, sin).transpose(1, 2).reshape(x.shape)
        return out
torch.manual_seed(0)
model = Model().eval().to(torch.bfloat16)
x = torch.randn(4, 32, 256).to(torch.bfloat16)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
    return y
"""

SERVE = MODEL + SERVE_TAIL


def test_rotary_after_a_q_norm_is_its_own_chain(tmp_path):
    env, rows = warm_chains(tmp_path, MODEL + "run(20)\n")
    norm = "chain: _to_copy -> pow -> mean -> add -> pow -> mul -> _to_copy -> mul -> _to_copy"
    rotary = "chain: mul -> neg -> cat -> mul -> add"
    assert norm in rows and rows[norm]["status"] == "inserted", rows
    assert rotary in rows and rows[rotary]["status"] in ("inserted", "no_faster_kernel"), rows

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 2e-2, r
    served = served_by_row(r["entries"])
    assert served[norm]["completed"] >= 30, r["entries"]
    if rows[rotary]["status"] == "inserted":  # from each forward's second layer on (sin's storage)
        assert served[rotary]["completed"] >= 20, r["entries"]
