"""A CNN in channels_last: a per-channel scale and shift after a depthwise conv,
`dw(x).mul(gamma).add(beta)` with `gamma` and `beta` of shape [1, C, 1, 1], as one chain kernel that
walks memory order (rows of the channels, not of the logical last dim W, whose elements are C
apart: docs/chains.md). `kforge warmup` with its default options tunes it; a fresh process
serves it, its output channels_last as eager's and within tolerance. (ConvNeXt's layer scale
adds the block's input instead, an activation the head cannot predict: docs/chains.md.)"""

import json

from conftest import run_python
from fixtures.chain_warmup import serving, warm_chains

MODEL = """
import torch
class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = torch.nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.gamma = torch.nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        self.beta = torch.nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
    def forward(self, x):
        return self.dw(x).mul(self.gamma).add(self.beta)
torch.manual_seed(0)
model = torch.nn.Sequential(*[Block(64) for _ in range(3)]).eval().to(memory_format=torch.channels_last)
x = torch.randn(8, 64, 28, 28).to(memory_format=torch.channels_last)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
    return y
"""

SERVE = MODEL + """
import json, kernel_forge as kf
y = run(12)
kf.disable()
want = run(1)
kf.enable()
err = ((y - want).abs().max() / want.abs().max()).item()
print(json.dumps({"err": err, "channels_last": y.is_contiguous(memory_format=torch.channels_last),
                  "entries": kf.chain_entries()}))
"""


def test_a_channels_last_scale_and_shift_run_as_one_chain_kernel(tmp_path):
    env, rows = warm_chains(tmp_path, MODEL + "run(20)\n")
    sig = "chain: mul -> add"
    assert sig in rows, rows
    assert rows[sig]["status"] in ("inserted", "no_faster_kernel"), rows[sig]

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 1e-5 and r["channels_last"], r
    served = {e["ops"]: e for e in serving(r["entries"])}
    if rows[sig]["status"] == "inserted":
        # 12 forwards x 3 blocks: the first forward learns, one more head is the first-use check
        assert served["mul.Tensor -> add.Tensor"]["completed"] >= 30, r["entries"]
