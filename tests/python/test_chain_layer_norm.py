"""A residual add then a layer norm as one chain kernel (forge/templates/chain.c, the layer-norm
member; docs/chains.md): the block every BERT, ViT, Whisper and Swin layer ends with twice.
`kforge warmup` on a model script tunes it with its default options, and a fresh process on that
cache serves it: the block's output within the norm's tolerance of float64, the norm's mean and
rstd (returned by a direct native_layer_norm call) within tolerance of eager's, the chain
completed at every block after its first-use check."""

import json

from conftest import run_python
from fixtures.chain_warmup import serving, warm_chains

MODEL = """
import torch
class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.ln = torch.nn.LayerNorm(d)
    def forward(self, x):
        return self.ln(x + self.lin(x))
torch.manual_seed(0)
model = torch.nn.Sequential(*[Block(192) for _ in range(3)]).eval()
x = torch.randn(4, 24, 192)
a = torch.randn(96, 256)
w, bias = torch.randn(256), torch.randn(256)
class Direct(torch.nn.Module):  # mean and rstd observed
    def forward(self, a):
        return torch.native_layer_norm(a * 0.5, [256], w, bias, 1e-6)
direct = lambda: Direct()(a)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
            d = direct()
    return y, d
"""

WARM = MODEL + "run(20)\n"

SERVE = MODEL + """
import json, kernel_forge as kf
y, d = run(12)
kf.disable()
with torch.inference_mode():
    ref = model.double()(x.double())
    d_eager = direct()
kf.enable()
err = lambda u, v: ((u.double() - v.double()).abs().max() / v.double().abs().max()).item()
entries = kf.chain_entries()
# the model check's arms, switched per forward (kernel_forge/_modelcheck.py): each forward with
# chains on completes its heads as if they had never been switched off
model.float()
run(1)  # new weights (model.float()): their first forward learns them
count = lambda: {e["ops"]: (e["heads"], e["completed"]) for e in kf.chain_entries()}
arms = []
for arm in ["all", "off", "none", "none", "off", "all"] * 2:
    (kf.enable if arm != "none" else kf.disable)()
    (kf.enable_chains if arm == "all" else kf.disable_chains)()
    before = count()
    run(1)
    arms.append([arm, {k: [a - b for a, b in zip(v, before[k])] for k, v in count().items()}])
kf.enable()
kf.enable_chains()
print(json.dumps({"y": err(y, ref), "direct": [err(u, v) for u, v in zip(d, d_eager)],
                  "entries": entries, "arms": arms}))
"""


def test_warmup_fuses_add_layer_norm_and_a_fresh_process_serves_it(tmp_path):
    env, rows = warm_chains(tmp_path, WARM)
    assert {"chain: add -> native_layer_norm", "chain: mul -> native_layer_norm"} <= set(rows), rows
    assert all(r["status"] in ("inserted", "no_faster_kernel") for r in rows.values()), rows

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["y"] < 1e-5 and max(r["direct"]) < 1e-5, r
    inserted = [s for s, row in rows.items() if row["status"] == "inserted"]
    served = {e["ops"]: e for e in serving(r["entries"])}
    # every inserted chain serves: 12 forwards x 3 blocks (36 heads; the first forward's learn
    # each block's weights, one more is the first-use check), 12 direct calls
    want = {"chain: add -> native_layer_norm": ("add.Tensor -> native_layer_norm", 30),
            "chain: mul -> native_layer_norm": ("mul.Tensor -> native_layer_norm", 10)}
    for sig in inserted:
        ops, n = want[sig]
        assert ops in served and served[ops]["completed"] >= n, r["entries"]
    # per forward: 3 blocks' heads and the direct call's, each completed with chains on, none off
    per_forward = {"add.Tensor -> native_layer_norm": 3, "mul.Tensor -> native_layer_norm": 1}
    for arm, delta in r["arms"]:
        for ops in served:
            n = per_forward[ops] if arm == "all" else 0
            assert delta[ops] == [n, n], (arm, r["arms"])
