"""L2 normalizations of the last dim as chain kernels, the 2-norm the chain's reduction
(forge/templates/chain.c): written out, x / x.norm(dim=-1, keepdim=True).clamp_min(eps), the
whole of it; torch.nn.functional.normalize (XCiT's and EdgeNeXt's q and k), its norm and clamp
(its division reads an expand of the clamp, which the recorder does not follow). `kforge warmup`
with its default options tunes both, and a fresh process on that cache serves them, within
float32 rounding of eager, each chain completed at its every block after the first forward."""

import json

from conftest import run_python
from fixtures.chain_warmup import SERVE_TAIL, serving, warm_chains

MODEL = """
import torch
class Block(torch.nn.Module):
    def __init__(self, d, functional):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.functional = functional
    def forward(self, x):
        q = self.lin(x)
        if self.functional:
            return torch.nn.functional.normalize(q, dim=-1)
        return q / q.norm(dim=-1, keepdim=True).clamp_min(1e-12)
torch.manual_seed(0)
model = torch.nn.Sequential(*[Block(64, i % 2) for i in range(6)]).eval()
x = torch.randn(8, 96, 64)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
    return y
"""

WARM = MODEL + "run(20)\n"

SERVE = MODEL + SERVE_TAIL


def test_warmup_fuses_the_norm_and_its_clamp_and_a_fresh_process_serves_them(tmp_path):
    env, rows = warm_chains(tmp_path, WARM)
    sigs = {"chain: linalg_vector_norm -> clamp_min -> div": "linalg_vector_norm -> clamp_min -> div.Tensor",
            "chain: linalg_vector_norm -> clamp_min": "linalg_vector_norm -> clamp_min"}
    for sig in sigs:
        assert sig in rows, rows
        # a shared host's timing may keep a faster kernel out: then it is not served (below)
        assert rows[sig]["status"] in ("inserted", "no_faster_kernel"), rows[sig]

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 1e-5, r  # against eager, relative to its largest element
    served = {e["ops"]: e for e in serving(r["entries"])}
    for sig, ops in sigs.items():
        if rows[sig]["status"] == "inserted":
            # 12 forwards x 3 blocks: the first forward learns, one more head is the first-use check
            assert ops in served and served[ops]["completed"] >= 30, r["entries"]
        else:
            assert ops not in served, r["entries"]
