"""A residual stream stored transposed, as Whisper's encoder keeps it (its convolutions' [B, D, T]
output permuted to [B, T, D]: every residual add then stores with those strides), and the next
layer's norm after each add: `add -> native_layer_norm` with the add's output strided and the
norm's contiguous (docs/chains.md; cuda_chain's tile walk on the GPU). `kforge warmup` with its
default options tunes it, a fresh process serves it within tolerance of eager, in f32 and bf16,
and the served add keeps eager's strides. The same on CUDA, on the H200:
    PYTHONPATH=$PWD python3 -m pytest -q -m gpu tests/python/test_chain_transposed_norm.py"""

import json

import pytest
from conftest import run_python
from fixtures.chain_warmup import SERVE_DICT_TAIL, serving, warm_chains

MODEL = """
import torch
DEV = "cpu"
class Layer(torch.nn.Module):  # a pre-norm layer, its attention replaced by a linear
    def __init__(self, d, dtype):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d).to(dtype)
        self.fc = torch.nn.Linear(d, d).to(dtype)
    def forward(self, h):
        return h + self.fc(self.norm(h))  # the residual first: the sum takes h's strides
torch.manual_seed(0)
CASES = {"f32": (torch.float32, (2, 40, 48)), "bf16": (torch.bfloat16, (2, 64, 32))}
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleDict({k: torch.nn.ModuleList([Layer(s[2], dt) for _ in range(4)])
                                           for k, (dt, s) in CASES.items()})
        self.final = torch.nn.ModuleDict({k: torch.nn.LayerNorm(s[2]).to(dt) for k, (dt, s) in CASES.items()})
    def forward(self, xs):
        out = {}
        for k, layers in self.layers.items():
            h = xs[k].permute(0, 2, 1)  # [B, D, T] -> [B, T, D], T contiguous
            for layer in layers:
                h = layer(h)
            out[k] = (h, self.final[k](h))
        return out
net = Net().eval().to(DEV)
xs = {k: torch.randn(s[0], s[2], s[1]).to(dt).to(DEV) for k, (dt, s) in CASES.items()}
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            out = net(xs)
    return out
"""

SERVE = MODEL + SERVE_DICT_TAIL


@pytest.mark.parametrize("dev", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_transposed_residual_add_and_the_next_norm_are_one_kernel(tmp_path, dev):
    model = MODEL.replace('DEV = "cpu"', f'DEV = "{dev}"')
    env, _ = warm_chains(tmp_path, model + "run(20)\n")
    with open(tmp_path / "w.json") as f:
        chains = [r for r in json.load(f)["rows"] if r["signature"] == "chain: add -> native_layer_norm"]
    # one chain per dtype, each bound (no "not contiguous" refusal) and verified; inserted where
    # faster than its members (bf16's by about 1.5x on the 2-core CPU; f32's host kernel may not be)
    assert len(chains) == 2 and all(r["best_us"] for r in chains), chains
    inserted = [r for r in chains if r["status"] == "inserted"]
    assert inserted, chains
    check = """
h = run(1)
print(json.dumps({k: list(v[0].stride()) for k, v in h.items()}))
"""
    p = run_python(SERVE.replace(MODEL, model) + check, env)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    r, strides = json.loads(lines[-2]), json.loads(lines[-1])
    tol = {"f32": 1e-5, "bf16": 3e-2}
    assert all(r["err"][k] < tol[k] for k in tol), r["err"]
    # the sums keep eager's transposed strides, served or not: [B, T, D] with T contiguous
    assert strides == {"f32": [1920, 1, 40], "bf16": [2048, 1, 64]}, strides
    served = [e for e in serving(r["entries"]) if e["ops"].startswith("add.Tensor -> native_layer_norm")]
    assert len(served) == len(inserted) and all(e["completed"] >= 10 for e in served), r["entries"]
