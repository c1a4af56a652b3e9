"""Two chain kernels with one head signature, one the other's first members: the norm followed
by a multiply by a per-channel scale in each block's first half, the same norm followed by a
linear in its second half. The longer one serves a head; where its outcomes predict that it ends
early (the second half), the shorter one serves instead while the longer is followed by
signature, so that both serve at their own places (kernel_forge.chain_entries()); the output is
eager's within bf16 rounding. The same with two chains that part after the head (a cast to
float32 before a norm, and before a silu: Qwen 3.5's)."""

import json

from conftest import run_python
from fixtures.chain_warmup import GEMMA_RMSNORM, SERVE_TAIL, THREE_BLOCKS, served_by_row, warm_chains

MODEL = "import torch\n" + GEMMA_RMSNORM + """
class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin, self.lin2 = torch.nn.Linear(d, d), torch.nn.Linear(d, d)
        self.n1, self.n2 = Norm(d), Norm(d)
        self.scale = torch.nn.Parameter(torch.rand(d))
    def forward(self, x):
        h = self.n1(self.lin(x)) * self.scale
        return self.lin2(self.n2(h))
""" + THREE_BLOCKS

SERVE = MODEL + SERVE_TAIL

NORM = "chain: _to_copy -> pow -> mean -> add -> pow -> mul -> _to_copy -> mul -> _to_copy"


def test_a_shorter_chain_serves_where_the_longer_ends_early(tmp_path):
    env, rows = warm_chains(tmp_path, MODEL + "run(20)\n")
    assert rows.get(NORM, {}).get("status") == "inserted", rows
    assert rows.get(NORM + " -> mul", {}).get("status") == "inserted", rows

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 2e-2, r
    served = served_by_row(r["entries"])
    # 12 forwards x 3 blocks each, less the first forwards (weights learnt, outcomes learnt)
    assert served[NORM + " -> mul"]["completed"] >= 24, r["entries"]
    assert served[NORM]["completed"] >= 24, r["entries"]
    assert served[NORM + " -> mul"]["dropped"] <= 3, r["entries"]


SIBLINGS = "import torch\nimport torch.nn.functional as F\n" + GEMMA_RMSNORM + """
class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin, self.lin2, self.lin3 = (torch.nn.Linear(d, d) for _ in range(3))
        self.n1 = Norm(d)
    def forward(self, x):
        h = self.lin3(self.n1(self.lin(x)))
        return h + F.silu(self.lin2(x).float()).type_as(x)
""" + THREE_BLOCKS

SILU = "chain: _to_copy -> silu -> _to_copy"


def test_a_chain_parting_from_the_longest_after_its_head_serves_at_its_places(tmp_path):
    env, rows = warm_chains(tmp_path, SIBLINGS + "run(20)\n")
    assert rows.get(NORM, {}).get("status") == "inserted", rows
    assert rows.get(SILU, {}).get("status") == "inserted", rows

    p = run_python(SIBLINGS + SERVE_TAIL, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 2e-2, r
    served = served_by_row(r["entries"])
    # before: the norm's kernel, the longest for the head, was tried (and skipped) at the silu's
    # places too, and the silu's never ran
    assert served[SILU]["completed"] >= 24 and served[SILU]["dropped"] == 0, r["entries"]
    assert served[NORM]["completed"] >= 24 and served[NORM]["skipped"] <= 3, r["entries"]
