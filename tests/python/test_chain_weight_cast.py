"""Gemma's RMSNorm casts its bf16 weight to float32 between the norm's multiplies
(`normed * self.weight.float()`), Qwen 3.5's adds 1.0 to that cast first: calls that read only a
weight, so they are linked to the norm's run by nothing they read. The recorder holds such a call
back and joins it to the run when the next call reads both its output and the run's (the
weight's multiply): one chain of 9 (10) members instead of a norm and a `mul -> _to_copy` after
it. `kforge warmup` with its default options tunes it (the cast is one value per column, stored
once); a fresh process serves it, its output as eager's within bf16 rounding. On the host and
on CUDA (marked gpu)."""

import json

import pytest

from conftest import run_python
from fixtures.chain_warmup import GEMMA_RMSNORM, SERVE_TAIL, served_by_row, warm_chains

MODEL = "import torch\n" + GEMMA_RMSNORM + """
class Block(torch.nn.Module):
    def __init__(self, d, shift):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.norm = Norm(d, shift)
    def forward(self, x):
        return self.norm(self.lin(x))
torch.manual_seed(0)
model = torch.nn.Sequential(*[Block(256, SHIFT) for _ in range(3)]).eval().to(torch.bfloat16).to(DEV)
x = torch.randn(8, 32, 256).to(torch.bfloat16).to(DEV)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
    return y
"""



@pytest.mark.parametrize("dev", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("shift", [False, True], ids=["gemma", "qwen3_5"])
def test_a_weight_cast_between_the_norm_and_its_multiply_joins_the_chain(tmp_path, shift, dev):
    model = MODEL.replace("SHIFT", str(shift)).replace("DEV", repr(dev))
    env, rows = warm_chains(tmp_path, model + "run(20)\n")
    joined = ("chain: _to_copy -> pow -> mean -> add -> pow -> mul -> _to_copy -> "
              + ("add -> " if shift else "") + "mul -> _to_copy")
    assert joined in rows and rows[joined]["status"] == "inserted", rows

    p = run_python(model + SERVE_TAIL, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 2e-2, r  # bf16 outputs of a float computation: a few ulps at most
    served = served_by_row(r["entries"])
    # 12 forwards x 3 blocks, less the first forward's (each block's weight learnt) and the check
    assert joined in served and served[joined]["completed"] >= 30, r["entries"]
