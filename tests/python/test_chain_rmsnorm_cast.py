"""transformers' RMSNorm on a bf16 model casts to float32 first (`copy_` into a fresh tensor),
which heads the recorded chain and writes in place; the spec leaves that head out and starts at
pow (docs/chains.md). `kforge warmup` with its default options tunes pow -> mean -> add -> rsqrt
-> mul, and a fresh process serves it: the block's output as eager's within bf16 rounding, the
chain completed at every block after its first-use check."""

import json

from conftest import run_python
from fixtures.chain_warmup import HF_RMSNORM, warm_chains

MODEL = "import torch\n" + HF_RMSNORM + """
class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = RMSNorm(d)
        self.lin = torch.nn.Linear(d, d)
    def forward(self, x):
        return x + self.lin(self.norm(x))
torch.manual_seed(0)
model = torch.nn.Sequential(*[Block(256) for _ in range(3)]).eval().to(torch.bfloat16)
x = torch.randn(8, 32, 256).to(torch.bfloat16)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
    return y
"""

WARM = MODEL + "run(20)\n"

SERVE = MODEL + """
import json, kernel_forge as kf
y = run(12)
kf.disable()
want = run(1)
kf.enable()
err = ((y.double() - want.double()).abs().max() / want.double().abs().max()).item()
print(json.dumps({"err": err, "entries": kf.chain_entries()}))
"""


def test_warmup_fuses_the_rmsnorm_after_its_cast_and_a_fresh_process_serves_it(tmp_path):
    ops = {}
    env, rows = warm_chains(tmp_path, WARM, ops)
    sig = "chain: pow -> mean -> add -> rsqrt -> mul"
    assert sig in rows, rows
    assert rows[sig]["status"] == "inserted", rows[sig]
    # the chain runs every call of its members: none of them took a search of its own
    (pow_row,) = [r for s, r in ops.items() if s.startswith("pow.Tensor_Scalar")]
    assert pow_row["status"] == f"not tuned: its calls run in the kernel of {sig}", pow_row
    assert pow_row["iterations"] == 0

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    # the chain's f32 result is rounded to bf16 by the eager cast after it: a few bf16 ulps
    assert r["err"] < 2e-2, r
    served = {e["ops"]: e for e in r["entries"] if e["state"] == "served"}
    ops = "pow.Tensor_Scalar -> mean.dim -> add.Tensor -> rsqrt -> mul.Tensor"
    # 12 forwards x 3 blocks: the first forward learns, one more head is the first-use check
    assert ops in served and served[ops]["completed"] >= 30, r["entries"]
