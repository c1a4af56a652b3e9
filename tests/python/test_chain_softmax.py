"""Scaled scores, an attention mask added, then a softmax of the last dim, as one chain kernel
(forge/templates/chain.c, the softmax member; docs/chains.md): the attention of Swin and of
models that run attention without SDPA. `kforge warmup` with its default options tunes it, and
a fresh process on that cache serves it: the output within the softmax's tolerance of float64,
the chain completed at every block after its first-use check. A causal mask made in every
forward under inference_mode (transformers' eager attention) is predicted from the block before
(an inference tensor, held by the write watch): the chain is served from the second block on."""

import json

from conftest import run_python
from fixtures.chain_warmup import serving, warm_chains

MODEL = """
import torch
class Attn(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qk = torch.nn.Linear(d, 2 * d)
        self.scale = d ** -0.5
    def forward(self, x, mask):
        q, k = self.qk(x).chunk(2, -1)
        s = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        return torch.softmax(s + mask, -1)
class Net(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Attn(d) for _ in range(3))
    def forward(self, x, mask):
        return [b(x, mask) for b in self.blocks]
torch.manual_seed(0)
model = Net(64).eval()
x = torch.randn(8, 96, 64)
mask = torch.zeros(96, 96).masked_fill(torch.rand(96, 96) < 0.2, float("-inf"))
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x, mask)
    return y
"""

WARM = MODEL + "run(20)\n"

SERVE = MODEL + """
import json, kernel_forge as kf
y = run(12)
kf.disable()
with torch.inference_mode():
    ref = model.double()(x.double(), mask.double())
kf.enable()
err = max(((u.double() - v).abs().max()).item() for u, v in zip(y, ref))
print(json.dumps({"err": err, "entries": kf.chain_entries()}))
"""


def test_warmup_fuses_mask_add_softmax_and_a_fresh_process_serves_it(tmp_path):
    env, rows = warm_chains(tmp_path, WARM)
    sig = "chain: mul -> add -> _softmax"  # the scale, the mask, the softmax
    assert sig in rows, rows
    # on this shared host the fused kernel is about 1.3x faster than eager's three calls: a
    # slower measurement may keep it out, and then nothing is served (checked below)
    assert rows[sig]["status"] in ("inserted", "no_faster_kernel"), rows[sig]

    p = run_python(SERVE, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 1e-5, r  # probabilities: an absolute error
    served = {e["ops"]: e for e in serving(r["entries"])}
    ops = "mul.Tensor -> add.Tensor -> _softmax"
    if rows[sig]["status"] == "inserted":
        # 12 forwards x 3 blocks: the first forward learns, one more head is the first-use check
        assert ops in served and served[ops]["completed"] >= 30, r["entries"]
    else:
        assert ops not in served, r["entries"]


# the mask made in the forward, as transformers' eager attention does: an inference tensor
CAUSAL = MODEL.replace("""    def forward(self, x, mask):
        return [b(x, mask) for b in self.blocks]""", """    def forward(self, x, mask):
        causal = torch.where(mask > 0, 0.0, float("-inf"))
        return [b(x, causal) for b in self.blocks]""").replace(
    "mask = torch.zeros(96, 96).masked_fill(torch.rand(96, 96) < 0.2, float(\"-inf\"))",
    "mask = torch.ones(96, 96).tril()")


def test_a_mask_made_in_every_forward_is_predicted_from_the_block_before(tmp_path):
    env, rows = warm_chains(tmp_path, CAUSAL + "run(20)\n")
    sig = "chain: mul -> add -> _softmax"
    assert sig in rows and rows[sig]["status"] in ("inserted", "no_faster_kernel"), rows

    p = run_python(CAUSAL + SERVE[len(MODEL):], env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["err"] < 1e-5, r
    served = {e["ops"]: e for e in serving(r["entries"])}
    if rows[sig]["status"] == "inserted":
        # 12 forwards x 3 blocks; the first block of each forward has a new mask (observed)
        assert served["mul.Tensor -> add.Tensor -> _softmax"]["completed"] >= 22, r["entries"]


# transformers' eager attention in bf16: softmax(s + mask, dtype=float32).to(bf16), the cast in
# with the layout and the tensor's own device passed, the cast back after the softmax
BF16 = CAUSAL.replace("return torch.softmax(s + mask, -1)",
                      "return torch.softmax(s + mask, -1, dtype=torch.float32).to(x.dtype)").replace(
    "causal = torch.where(mask > 0, 0.0, float(\"-inf\"))",
    "causal = torch.where(mask > 0, 0.0, float(\"-inf\")).to(x.dtype)").replace(
    "model = Net(64).eval()", "model = Net(64).eval().bfloat16()").replace(
    "x = torch.randn(8, 96, 64)", "x = torch.randn(8, 96, 64).bfloat16()")

SERVE_BF16 = BF16 + """
import json, kernel_forge as kf
y = run(12)
kf.disable()
ref = run(1)
kf.enable()
err = max(((u.float() - v.float()).abs().max()).item() for u, v in zip(y, ref))
print(json.dumps({"err": err, "dtype": str(y[0].dtype), "entries": kf.chain_entries()}))
"""


def test_a_softmax_cast_back_after_it_is_one_chain(tmp_path):
    env, rows = warm_chains(tmp_path, BF16 + "run(20)\n")
    sig = "chain: mul -> add -> _to_copy -> _softmax -> _to_copy"
    assert sig in rows and rows[sig]["status"] in ("inserted", "no_faster_kernel"), rows

    p = run_python(SERVE_BF16, env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    # float32 probabilities rounded to bf16: a sum in another order may round one ulp apart
    assert r["dtype"] == "torch.bfloat16" and r["err"] <= 2 ** -8, r
    served = {e["ops"]: e for e in serving(r["entries"])}
    if rows[sig]["status"] == "inserted":
        # the first block of each forward has a new mask (observed)
        assert served["mul.Tensor -> add.Tensor -> _to_copy -> _softmax -> _to_copy"]["completed"] >= 22, \
            r["entries"]
