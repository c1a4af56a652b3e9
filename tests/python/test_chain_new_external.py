"""A chain whose later member reads a tensor new to the plugin at every run (SwiGLU as
transformers writes it: `down(act(gate(x)) * up(x))`, where up(x) is a linear's output the
plugin does not see) cannot be served: the head predicts each external from an earlier run's
tensors. Recording says so in chains()' fusable_reason, and such a chain never becomes a job; a
weight read the same way (new only in the first forward) keeps its spec."""

from conftest import run_python

SCRIPT = """
import json, torch, kernel_forge as kf
kf.set_recording(True)
class MLP(torch.nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.gate = torch.nn.Linear(d, h, bias=False)
        s.up = torch.nn.Linear(d, h, bias=False)
        s.down = torch.nn.Linear(h, d, bias=False)
    def forward(s, x):
        return s.down(torch.nn.functional.silu(s.gate(x)) * s.up(x))
class Scaled(torch.nn.Module):  # silu -> mul by a weight: the weight is known at the head
    def __init__(s, d):
        super().__init__()
        s.w = torch.nn.Parameter(torch.randn(d))
    def forward(s, x):
        return torch.nn.functional.silu(x + 1.0) * s.w
m = torch.nn.Sequential(MLP(64, 128), MLP(64, 128), Scaled(64)).eval()
x = torch.randn(4, 64)
with torch.inference_mode():
    for _ in range(6):
        m(x)
print(json.dumps([{"ops": c["ops"], "calls": c["calls"], "spec": c["spec"] is not None,
                   "why": c.get("fusable_reason")} for c in kf.chains()]))
"""


def test_a_chain_reading_a_new_activation_has_no_spec():
    import json

    p = run_python(SCRIPT, {})
    assert p.returncode == 0, p.stderr[-3000:]
    chains = json.loads(p.stdout.strip().splitlines()[-1])
    swiglu = [c for c in chains if c["ops"] == ["aten::silu", "aten::mul.Tensor"]]
    assert len(swiglu) == 1 and not swiglu[0]["spec"], chains
    n = swiglu[0]["calls"]
    assert swiglu[0]["why"].startswith(f"member 1 reads a tensor new to the plugin in {n} of {n} runs")
    scaled = [c for c in chains if c["ops"] == ["aten::add.Tensor", "aten::silu", "aten::mul.Tensor"]]
    assert len(scaled) == 1 and scaled[0]["spec"], chains


# GPT-2's tanh GELU (transformers' NewGELUActivation) under no_grad: `0.5 * h` is computed first,
# a new tensor at every run; it was an external made in the run, which ended the spec before the
# mul reading it. Now that h (a view of the output addmm's bias copy_ writes) links the run, the
# spec holds the whole GELU from `0.5 * h` on (the rule itself: tests/c/test_chains.c).
GELU_NEW = """
import json, math, torch, kernel_forge as kf
kf.set_recording(True)
class Block(torch.nn.Module):  # its projection as GPT-2's Conv1D computes it
    def __init__(s, d):
        super().__init__()
        s.w = torch.nn.Parameter(torch.randn(d, 4 * d) / d)
        s.b = torch.nn.Parameter(torch.zeros(4 * d))
    def forward(s, x):
        h = torch.addmm(s.b, x.view(-1, x.shape[-1]), s.w).view(*x.shape[:-1], -1)
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
m = torch.nn.Sequential(Block(32), torch.nn.Linear(128, 32), Block(32)).eval()
x = torch.randn(4, 32)
with torch.no_grad():
    for _ in range(6):
        m(x)
print(json.dumps([{"ops": [o.split("::")[1].split(".")[0] for o in c["ops"]],
                   "spec": [s["op"].split("::")[1].split(".")[0] for s in c["spec"]["members"]]
                   if c["spec"] else None} for c in kf.chains()]))
"""


def test_gpt2_tanh_gelu_is_one_spec():
    import json

    p = run_python(GELU_NEW, {})
    assert p.returncode == 0, p.stderr[-3000:]
    chains = json.loads(p.stdout.strip().splitlines()[-1])
    gelu = [c for c in chains if "tanh" in c["ops"]]
    assert gelu and gelu[0]["ops"] == ["copy_", "mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"], chains
    assert gelu[0]["spec"] == gelu[0]["ops"][1:], chains


# A layer scale before the residual add, then the next norm (DINOv2, CaiT, ConvNeXt:
# `x = x + gamma * f(x)`, then `norm(x)`): two places per block run the same chain, and each reads
# as its residual the sum the other place's run made. That tensor is new at every place, so the
# spec starts at the add (whose two inputs the head then takes), not at the mul, whose served head
# would find another residual at every place and drop.
LAYER_SCALE = """
import json, torch, kernel_forge as kf
kf.set_recording(True)
class Block(torch.nn.Module):
    def __init__(s, d):
        super().__init__()
        s.f1, s.f2 = torch.nn.Linear(d, d), torch.nn.Linear(d, d)
        s.g1, s.g2 = torch.nn.Parameter(torch.rand(d)), torch.nn.Parameter(torch.rand(d))
        s.n1, s.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
    def forward(s, x):
        x = s.f1(s.n1(x)) * s.g1 + x
        return s.f2(s.n2(x)) * s.g2 + x
m = torch.nn.Sequential(*[Block(32) for _ in range(3)]).eval()
x = torch.randn(4, 8, 32)
with torch.inference_mode():
    for _ in range(6):
        m(x)
print(json.dumps([{"ops": [o.split("::")[1].split(".")[0] for o in c["ops"]],
                   "spec": [s["op"].split("::")[1].split(".")[0] for s in c["spec"]["members"]]
                   if c["spec"] else None, "first": c["spec_first"], "why": c.get("fusable_reason")}
                  for c in kf.chains()]))
"""


def test_a_layer_scaled_residual_spec_starts_at_the_add():
    import json

    p = run_python(LAYER_SCALE, {})
    assert p.returncode == 0, p.stderr[-3000:]
    chains = json.loads(p.stdout.strip().splitlines()[-1])
    scaled = [c for c in chains if c["ops"] == ["mul", "add", "native_layer_norm"]]
    assert scaled, chains
    assert all(c["spec"] == ["add", "native_layer_norm"] and c["first"] == 1 for c in scaled), chains
