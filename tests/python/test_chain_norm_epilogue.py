"""A norm with pointwise members after it as one chain kernel (forge/templates/chain.c: the norm's
epilogue; docs/chains.md): a diffusion UNet's ResNet block, `silu(norm1(x))` (the norm heads its
chain, its input from outside) and `silu(norm2(h + temb))`, then the residual add that the next
block's `norm1 -> silu` follows. `kforge warmup` with its default options tunes them, a fresh
process serves them: the norm's output, mean and rstd and the silu's within tolerance of eager's,
in f32 and bf16. The same on CUDA, on the H200:
    PYTHONPATH=$PWD python3 -m pytest -q -m gpu tests/python/test_chain_norm_epilogue.py"""

import json

import pytest
from conftest import run_python
from fixtures.chain_warmup import SERVE_DICT_TAIL, serving, warm_chains

MODEL = """
import torch
import torch.nn.functional as F
DEV = "cpu"
class ResBlock(torch.nn.Module):  # diffusers' ResnetBlock2D without its dropout
    def __init__(self, c, dtype):
        super().__init__()
        self.norm1 = torch.nn.GroupNorm(4, c).to(dtype)
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1).to(dtype)
        self.t = torch.nn.Linear(8, c).to(dtype)
        self.norm2 = torch.nn.GroupNorm(4, c).to(dtype)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1).to(dtype)
    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h + self.t(temb)[:, :, None, None])))
        return x + h
torch.manual_seed(0)
CASES = {"f32": (torch.float32, (2, 16, 8, 8)), "bf16": (torch.bfloat16, (2, 24, 6, 6))}
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleDict({k: torch.nn.ModuleList([ResBlock(s[1], dt) for _ in range(3)])
                                           for k, (dt, s) in CASES.items()})
    def forward(self, xs, temb):
        out = {}
        for k, blocks in self.blocks.items():
            h = xs[k]
            for b in blocks:
                h = b(h, temb[k])
            out[k] = (h,)
        return out
net = Net().eval().to(DEV)
xs = {k: torch.randn(s).to(dt).to(DEV) for k, (dt, s) in CASES.items()}
temb = {k: torch.randn(s[0], 8).to(dt).to(DEV) for k, (dt, s) in CASES.items()}
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            out = net(xs, temb)
    return out
"""

SERVE = MODEL + SERVE_DICT_TAIL


@pytest.mark.parametrize("dev", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_warmup_fuses_group_norm_then_silu_and_a_fresh_process_serves_it(tmp_path, monkeypatch, dev):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # eager's group norm waits on a busy host's threads
    model = MODEL.replace('DEV = "cpu"', f'DEV = "{dev}"')
    env, rows = warm_chains(tmp_path, model + "run(20)\n")
    with open(tmp_path / "w.json") as f:  # every chain row (several share a printed name)
        chains = [r for r in json.load(f)["rows"] if r["op"] == "kforge::chain"]
    names = {r["signature"] for r in chains}
    # the first block's norm heads its chain; the others follow the temb add or the residual add
    assert {"chain: native_group_norm -> silu", "chain: add -> native_group_norm -> silu"} <= names, chains
    inserted = [r for r in chains if r["status"] == "inserted"]
    assert {r["signature"] for r in inserted} >= {"chain: add -> native_group_norm -> silu"}, chains
    p = run_python(SERVE.replace(MODEL, model), env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    # three blocks of convolutions after each served norm: bf16's own rounding carried on
    tol = {"f32": 1e-5, "bf16": 3e-2}
    assert all(r["err"][k] < tol[k] for k in tol), r["err"]
    served = [e for e in serving(r["entries"]) if "native_group_norm" in e["ops"] and "silu" in e["ops"]]
    # each inserted chain serves in the fresh process after its first-use check (12 forwards)
    assert len(served) == len(inserted) and all(e["completed"] >= 10 for e in served), r["entries"]
