"""A residual or time-embedding add then a group norm as one chain kernel on the host backend
(forge/templates/chain.c, gn_bind / emit_gn; docs/chains.md): the block a diffusion UNet's
ResNet blocks, a VAE's and PoolFormer's end with. `kforge warmup` tunes it with its default
options, a fresh process serves it: outputs, mean and rstd within the norm's tolerance of eager's
in f32, bf16 and f16, with and without an affine weight, on 3-D and 4-D inputs; a channels-last
block is refused (its add's output is not contiguous) and stays eager (on CUDA, group_norm copies
a channels-last input to a contiguous one first). The same on CUDA (cuda_chain: a block per group,
or a cluster of blocks where groups are few), on the H200:
    PYTHONPATH=$PWD python3 -m pytest -q -m gpu tests/python/test_chain_group_norm.py"""

import json

import pytest
from conftest import run_python
from fixtures.chain_warmup import SERVE_DICT_TAIL, serving, warm_chains

MODEL = """
import torch
DEV = "cpu"
class Block(torch.nn.Module):  # a UNet ResNet block's tail: conv, the time embedding, the norm
    def __init__(self, c, groups, affine, dtype):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 1).to(dtype)
        self.t = torch.nn.Linear(8, c).to(dtype)
        self.norm = torch.nn.GroupNorm(groups, c, affine=affine).to(dtype)
    def forward(self, x, temb):
        return self.norm(self.conv(x) + self.t(temb)[:, :, None, None])
class Seq(torch.nn.Module):  # PoolFormer-like on [N, C, L]: x + mix(x), then the norm
    def __init__(self, c):
        super().__init__()
        self.mix = torch.nn.Conv1d(c, c, 1)
        self.norm = torch.nn.GroupNorm(1, c, eps=1e-6)
    def forward(self, x):
        return self.norm(x + self.mix(x))
torch.manual_seed(0)
CASES = {  # name: (channels, groups, affine, dtype, input shape)
    "f32": (24, 6, True, torch.float32, (3, 24, 6, 5)),
    "bf16": (40, 8, True, torch.bfloat16, (2, 40, 7, 7)),
    "f16_plain": (16, 4, False, torch.float16, (2, 16, 9, 4)),
    "cl": (20, 5, True, torch.float32, (2, 20, 3, 11)),
}
class Net(torch.nn.Module):  # one forward: three blocks per case, the 1-D stack, a direct call
    def __init__(self):
        super().__init__()
        self.cases = torch.nn.ModuleDict({k: torch.nn.ModuleList([Block(c, g, a, dt) for _ in range(3)])
                                          for k, (c, g, a, dt, _) in CASES.items()})
        self.seq = torch.nn.Sequential(*[Seq(36) for _ in range(3)])
    def forward(self, xs, temb, z):
        out = {}
        for k, blocks in self.cases.items():
            h = xs[k]
            for b in blocks:
                h = b(h, temb[k])
            out[k] = (h,)
        out["seq"] = (self.seq(z),)
        # mean and rstd observed: a direct call
        out["direct"] = torch.native_group_norm(z * 0.5, None, None, 2, 36, 29, 3, 1e-5)
        return out
net = Net().eval().to(DEV)
xs = {k: torch.randn(s).to(dt).to(DEV) for k, (_, _, _, dt, s) in CASES.items()}
xs["cl"] = xs["cl"].contiguous(memory_format=torch.channels_last)
temb = {k: torch.randn(s[0], 8).to(dt).to(DEV) for k, (_, _, _, dt, s) in CASES.items()}
z = torch.randn(2, 36, 29).to(DEV)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            out = net(xs, temb, z)
    return out
"""

SERVE = MODEL + SERVE_DICT_TAIL


@pytest.mark.parametrize("dev", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_warmup_fuses_add_group_norm_and_a_fresh_process_serves_it(tmp_path, monkeypatch, dev):
    # eager's CPU group norm on two OpenMP threads waits milliseconds for a thread the machine's
    # other work holds: the recording's shares would follow the load, not the script
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    model = MODEL.replace('DEV = "cpu"', f'DEV = "{dev}"')
    env, _ = warm_chains(tmp_path, model + "run(20)\n")
    with open(tmp_path / "w.json") as f:  # every chain row (they share their printed names)
        chains = [r for r in json.load(f)["rows"] if r["op"] == "kforge::chain"]
    names = {r["signature"] for r in chains}
    assert names == {"chain: add -> native_group_norm", "chain: mul -> native_group_norm"}, chains
    # the channels-last block's add stores a channels-last output: no chain kernel, with why (on
    # CUDA, group_norm hands the norm a contiguous copy of its input: no chain ends in the norm)
    if dev == "cpu":
        assert any(r["status"] == "no_template" and "is not contiguous" in r["detail"] for r in chains), chains
    inserted = [r for r in chains if r["status"] == "inserted"]
    assert len(inserted) >= 2 and all(r["status"] in ("inserted", "no_faster_kernel", "no_template")
                                      for r in chains), chains
    p = run_python(SERVE.replace(MODEL, model), env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    # bf16 / f16 outputs: eager's own rounding of the normalized value; f32 1e-5 (mean and rstd
    # of the direct call included)
    tol = {"f32": 1e-5, "cl": 1e-5, "seq": 1e-5, "direct": 1e-5, "bf16": 2e-2, "f16_plain": 4e-3}
    assert all(r["err"][k] < tol[k] for k in tol), r["err"]
    served = [e for e in serving(r["entries"]) if "native_group_norm" in e["ops"]]
    # each inserted chain serves in the fresh process after its first-use check (12 forwards)
    assert len(served) == len(inserted) and all(e["completed"] >= 10 for e in served), r["entries"]
