"""Autograd, a real transformers model, and threads, with the plugin loaded.

* Backward through every differentiable intercepted op: outputs and gradients are bit-identical
  to the eager baseline (a subprocess with KFORGE_DISABLE=1, which does not import kernel_forge),
  and the outputs keep the same grad_fn.
* A small random-weight causal LM from transformers (Qwen3.5 when this transformers has it, else
  Qwen3, else Llama), eager attention, float32, CPU: logits, loss and every parameter's gradient
  are bit-identical, and the plugin's stats show the calls the model really makes.
* Eight Python threads hammering relu / add / softmax: correct results, and per-signature call
  counts exactly equal to the calls made.

Run as a script (`python test_autograd_model.py OUT.pt`) this file is the worker of the first
two parts: it runs the gradient cases and the model in this process and saves what it saw.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
STATS = "__kforge_stats__"

# ---------------------------------------------------------------------------------------------
# gradient cases: name -> (targeted op, fn returning (outputs, inputs that want a gradient))

GRAD_CASES: dict = {}


def grad_case(name, op, fn):
    assert name not in GRAD_CASES, name
    GRAD_CASES[name] = (op, fn)


def leaf(*shape, dtype=torch.float32, positive=False, memory_format=None):
    x = torch.randn(*shape, dtype=dtype)
    if positive:
        x = x.abs() + 0.1
    if memory_format is not None:
        x = x.contiguous(memory_format=memory_format)
    return x.requires_grad_()


def _bn_grad(training, channels_last=False):
    x = leaf(4, 3, 5, 5, memory_format=torch.channels_last if channels_last else None)
    w, b = leaf(3), leaf(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.2)
    return [y], [x, w, b], [rm, rv]  # running stats: compared, not differentiated


def _inplace(method, *args, **kw):
    def fn():
        x = leaf(4, 7)
        y = x * 1.5  # a non-leaf, so it may be changed in place
        others = [a() if callable(a) else a for a in args]
        out = getattr(y, method)(*others, **kw)
        return [out], [x] + [o for o in others if isinstance(o, torch.Tensor) and o.requires_grad]
    return fn


SM, LSM = "aten::_softmax", "aten::_log_softmax"
for d in (0, 1, -1):
    grad_case(f"softmax_dim{d}", SM, lambda d=d: ([F.softmax(x := leaf(3, 4, 5), d)], [x]))
    grad_case(f"log_softmax_dim{d}", LSM, lambda d=d: ([F.log_softmax(x := leaf(3, 4, 5), d)], [x]))
grad_case("softmax_transposed", SM, lambda: ([F.softmax((x := leaf(6, 5)).t(), -1)], [x]))
grad_case("softmax_dtype_f64", SM, lambda: ([F.softmax(x := leaf(3, 5), -1, dtype=torch.float64)], [x]))
grad_case("softmax_bf16", SM, lambda: ([F.softmax(x := leaf(3, 40, dtype=torch.bfloat16), -1)], [x]))
grad_case("log_softmax_cross_entropy", LSM,
          lambda: ([F.cross_entropy(x := leaf(6, 10), torch.randint(0, 10, (6,)))], [x]))

LN = "aten::native_layer_norm"
grad_case("layer_norm_affine", LN, lambda: (
    [F.layer_norm(x := leaf(4, 6, 8), (8,), w := leaf(8), b := leaf(8))], [x, w, b]))
grad_case("layer_norm_no_affine", LN, lambda: ([F.layer_norm(x := leaf(4, 6, 8), (8,))], [x]))
grad_case("layer_norm_multi_dim", LN, lambda: (
    [F.layer_norm(x := leaf(3, 6, 8), (6, 8), w := leaf(6, 8), b := leaf(6, 8))], [x, w, b]))
grad_case("layer_norm_bf16", LN, lambda: (
    [F.layer_norm(x := leaf(4, 32, dtype=torch.bfloat16), (32,), w := leaf(32, dtype=torch.bfloat16))],
    [x, w]))

GN = "aten::native_group_norm"
for g in (1, 2, 4):
    grad_case(f"group_norm_groups{g}", GN, lambda g=g: (
        [F.group_norm(x := leaf(2, 8, 4, 4), g, w := leaf(8), b := leaf(8))], [x, w, b]))
grad_case("group_norm_no_affine", GN, lambda: ([F.group_norm(x := leaf(3, 6, 7), 3)], [x]))
grad_case("group_norm_channels_last", GN, lambda: (
    [F.group_norm(x := leaf(2, 8, 4, 4, memory_format=torch.channels_last), 4, w := leaf(8), b := leaf(8))],
    [x, w, b]))

BN = "aten::native_batch_norm"
grad_case("batch_norm_train", BN, lambda: _bn_grad(True))
grad_case("batch_norm_eval", BN, lambda: _bn_grad(False))
grad_case("batch_norm_train_channels_last", BN, lambda: _bn_grad(True, channels_last=True))
grad_case("batch_norm_eval_channels_last", BN, lambda: _bn_grad(False, channels_last=True))

GELU, SILU, RELU = "aten::gelu", "aten::silu", "aten::relu"
for appr in ("none", "tanh"):
    grad_case(f"gelu_{appr}", GELU, lambda a=appr: ([F.gelu(x := leaf(4, 37), approximate=a)], [x]))
    grad_case(f"gelu_{appr}_bf16", GELU,
              lambda a=appr: ([F.gelu(x := leaf(4, 37, dtype=torch.bfloat16), approximate=a)], [x]))
grad_case("silu", SILU, lambda: ([F.silu(x := leaf(4, 37))], [x]))
grad_case("silu_transposed", SILU, lambda: ([F.silu((x := leaf(9, 5)).t())], [x]))
grad_case("relu", RELU, lambda: ([F.relu(x := leaf(4, 37))], [x]))
grad_case("relu_channels_last", RELU,
          lambda: ([F.relu(x := leaf(2, 3, 4, 5, memory_format=torch.channels_last))], [x]))
grad_case("relu_inplace", "aten::relu_", _inplace("relu_"))
grad_case("clamp_min", "aten::clamp_min", lambda: ([torch.clamp_min(x := leaf(4, 9), 0.3)], [x]))
grad_case("clamp_min_inplace", "aten::clamp_min_", _inplace("clamp_min_", -0.2))

ADD, MUL = "aten::add.Tensor", "aten::mul.Tensor"
grad_case("add", ADD, lambda: ([(x := leaf(4, 7)) + (y := leaf(4, 7))], [x, y]))
grad_case("add_broadcast_alpha", ADD, lambda: ([torch.add(x := leaf(3, 1, 5), y := leaf(4, 1), alpha=-0.5)], [x, y]))
grad_case("add_scalar", ADD, lambda: ([(x := leaf(4, 7)) + 2.5], [x]))
grad_case("add_mixed_dtypes", ADD, lambda: ([(x := leaf(4, 7)) + (y := leaf(4, 7, dtype=torch.float64))], [x, y]))
grad_case("add_inplace", "aten::add_.Tensor", _inplace("add_", lambda: leaf(7), alpha=2))
grad_case("mul", MUL, lambda: ([(x := leaf(4, 7)) * (y := leaf(4, 7))], [x, y]))
grad_case("mul_broadcast", MUL, lambda: ([(x := leaf(3, 1, 5)) * (y := leaf(4, 1))], [x, y]))
grad_case("mul_scalar", MUL, lambda: ([(x := leaf(4, 7)) * 0.125], [x]))
grad_case("mul_inplace", "aten::mul_.Tensor", _inplace("mul_", lambda: leaf(4, 7)))

POW = "aten::pow.Tensor_Scalar"
for e in (2, 0.5, -1, 3):
    tag = str(e).replace(".", "p").replace("-", "m")
    grad_case(f"pow_{tag}", POW, lambda e=e: ([(x := leaf(4, 7, positive=True)).pow(e)], [x]))

MEAN = "aten::mean.dim"
grad_case("mean_dim_list_keepdim", MEAN, lambda: ([(x := leaf(3, 4, 5)).mean([0, 2], keepdim=True)], [x]))
grad_case("mean_last", MEAN, lambda: ([(x := leaf(3, 4, 5)).mean(-1)], [x]))
grad_case("mean_all", "aten::mean",  # mean.dim inside mean: nested
          lambda: ([(x := leaf(3, 4, 5)).mean()], [x]))
grad_case("mean_dtype_f64", MEAN, lambda: ([(x := leaf(3, 4, 5)).mean(1, dtype=torch.float64)], [x]))

CAT = "aten::cat"
grad_case("cat_dim0", CAT, lambda: ([torch.cat([x := leaf(2, 3), y := leaf(1, 3), z := leaf(4, 3)])], [x, y, z]))
grad_case("cat_dim1", CAT, lambda: ([torch.cat([x := leaf(2, 3), y := leaf(2, 5)], 1)], [x, y]))
grad_case("cat_with_empty", CAT, lambda: ([torch.cat([x := leaf(2, 3), y := leaf(0, 3)])], [x, y]))
grad_case("cat_mixed_dtypes", CAT, lambda: ([torch.cat([x := leaf(2, 3), y := leaf(2, 3, dtype=torch.float64)])], [x, y]))

MP = "aten::max_pool2d_with_indices"
grad_case("max_pool2d", MP, lambda: ([F.max_pool2d(x := leaf(2, 3, 8, 8), 2)], [x]))
grad_case("max_pool2d_k3_s2_p1", MP, lambda: ([F.max_pool2d(x := leaf(1, 4, 9, 9), 3, 2, 1)], [x]))
grad_case("max_pool2d_channels_last", MP,
          lambda: ([F.max_pool2d(x := leaf(2, 3, 8, 8, memory_format=torch.channels_last), 2)], [x]))

COPY = "aten::copy_"
grad_case("copy_to_f64", "aten::_to_copy", lambda: ([(x := leaf(4, 7)).to(torch.float64)], [x]))
grad_case("copy_contiguous_transposed", COPY, lambda: ([(x := leaf(7, 4)).t().contiguous()], [x]))

# generic reductions and gathers (forge/templates/reduce_ops.c, gather_ops.c)
grad_case("sum_dims_keepdim", "aten::sum.dim_IntList",
          lambda: ([(x := leaf(3, 4, 5)).sum([0, 2], keepdim=True)], [x]))
grad_case("sum_full", "aten::sum", lambda: ([(x := leaf(3, 4)).sum()], [x]))
grad_case("mean_full", "aten::mean", lambda: ([(x := leaf(3, 4)).mean()], [x]))
grad_case("amax", "aten::amax", lambda: ([(x := leaf(3, 7)).amax(1)], [x]))
grad_case("amin", "aten::amin", lambda: ([(x := leaf(3, 7)).amin(0)], [x]))
grad_case("max_dim", "aten::max.dim", lambda: ([(x := leaf(3, 7)).max(1).values], [x]))
grad_case("min_dim", "aten::min.dim", lambda: ([(x := leaf(3, 7)).min(-1, keepdim=True).values], [x]))
grad_case("prod_dim", "aten::prod.dim_int", lambda: ([(x := leaf(3, 5, positive=True)).prod(1)], [x]))
grad_case("prod_full", "aten::prod", lambda: ([(x := leaf(2, 3, positive=True)).prod()], [x]))
grad_case("var", "aten::var.correction", lambda: ([(x := leaf(4, 9)).var(1)], [x]))
grad_case("std", "aten::std.correction", lambda: ([(x := leaf(4, 9)).std(0, keepdim=True)], [x]))
grad_case("var_mean", "aten::var_mean.correction", lambda: (list(torch.var_mean(x := leaf(4, 9), 1)), [x]))
grad_case("vector_norm", "aten::linalg_vector_norm",
          lambda: ([torch.linalg.vector_norm(x := leaf(4, 9), dim=-1)], [x]))
grad_case("logsumexp", "aten::logsumexp", lambda: ([torch.logsumexp(x := leaf(4, 9), 1)], [x]))
grad_case("embedding", "aten::embedding",
          lambda: ([F.embedding(torch.randint(0, 10, (3, 4)), w := leaf(10, 6))], [w]))
grad_case("index_select", "aten::index_select",
          lambda: ([(x := leaf(5, 6)).index_select(1, torch.randint(0, 6, (4,)))], [x]))
grad_case("gather", "aten::gather",
          lambda: ([torch.gather(x := leaf(5, 6), 1, torch.randint(0, 6, (5, 3)))], [x]))

# a composite of several intercepted ops (on CPU F.rms_norm decomposes into pow/mean/add/mul)
grad_case("rms_norm_composite", POW, lambda: ([F.rms_norm(x := leaf(2, 5, 16), (16,), w := leaf(16))], [x, w]))


def run_grad_case(name, fn, kf):
    torch.manual_seed(zlib.crc32(name.encode()))
    if kf is not None:
        kf.reset_stats()
    res = fn()
    outs, inputs = res[0], res[1]
    extra = list(res[2]) if len(res) > 2 else []
    rows = None
    if kf is not None:
        rows = [{k: r[k] for k in ("op", "signature", "calls", "served", "fallback", "intercepted")}
                for r in kf.stats()]
    grad_fns = [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]
    gouts = [torch.randn(o.shape, dtype=o.dtype) for o in outs]
    grads = torch.autograd.grad(outs, inputs, gouts, allow_unused=True)
    return {
        "outputs": [o.detach().clone() for o in outs] + [t.clone() for t in extra],
        "grads": [g.clone() if g is not None else None for g in grads],
        "grad_fns": grad_fns,
        "rows": rows,
    }


# ---------------------------------------------------------------------------------------------
# the transformers model

BATCH, SEQ, VOCAB, HIDDEN, INTER, LAYERS, HEADS = 2, 16, 256, 64, 128, 2, 4


def build_model():
    """A 2-layer, hidden-64, vocab-256 causal LM with random weights: (name, model)."""
    import transformers

    common = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTER,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=2,
                  head_dim=16, max_position_embeddings=128, tie_word_embeddings=False,
                  attention_dropout=0.0)
    want = os.environ.get("KF_TEST_MODEL", "")  # force "qwen3" or "llama" (debugging the fallbacks)
    if want in ("", "qwen3_5") and hasattr(transformers, "Qwen3_5ForCausalLM"):
        # one Gated-DeltaNet (linear attention) layer and one full-attention layer
        cfg = transformers.Qwen3_5TextConfig(
            **common, layer_types=["linear_attention", "full_attention"],
            linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
            linear_value_head_dim=16, attn_implementation="eager")
        cls, name = transformers.Qwen3_5ForCausalLM, "qwen3_5"
    elif want in ("", "qwen3_5", "qwen3") and hasattr(transformers, "Qwen3ForCausalLM"):
        cfg = transformers.Qwen3Config(**common, attn_implementation="eager")
        cls, name = transformers.Qwen3ForCausalLM, "qwen3"
    else:
        cfg = transformers.LlamaConfig(**common, attn_implementation="eager")
        cls, name = transformers.LlamaForCausalLM, "llama"
    cfg._attn_implementation = "eager"
    torch.manual_seed(1234)
    model = cls(cfg).to(torch.float32)
    model.train()
    return name, model


def attention_layers(cfg) -> int:
    types = getattr(cfg, "layer_types", None) or ["full_attention"] * cfg.num_hidden_layers
    return sum(1 for t in types if t in ("full_attention", "sliding_attention"))


def run_model(kf):
    import transformers

    name, model = build_model()
    cfg = model.config
    assert cfg._attn_implementation == "eager", cfg._attn_implementation
    norm_calls = [0]

    def count(_m, _i, _o):
        norm_calls[0] += 1

    for m in model.modules():
        if "RMSNorm" in type(m).__name__:
            m.register_forward_hook(count)
    g = torch.Generator().manual_seed(99)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, -3:] = 0  # right padding on the second sequence
    labels = ids.masked_fill(mask == 0, -100)
    if kf is not None:
        kf.reset_stats()
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    fwd_rows = kf.stats() if kf is not None else None
    has_grad_fn = out.logits.grad_fn is not None and out.loss.grad_fn is not None
    out.loss.backward()
    all_rows = kf.stats() if kf is not None else None
    grads = {n: (p.grad.clone() if p.grad is not None else None) for n, p in model.named_parameters()}
    return {
        "model": name,
        "transformers": transformers.__version__,
        "model_class": type(model).__name__,
        "attention_layers": attention_layers(cfg),
        "num_layers": cfg.num_hidden_layers,
        "hidden_act": cfg.hidden_act,
        "norm_calls": norm_calls[0],
        "logits": out.logits.detach().clone(),
        "loss": out.loss.detach().clone(),
        "has_grad_fn": has_grad_fn,
        "grads": grads,
        "fwd_rows": fwd_rows,
        "all_rows": all_rows,
    }


def worker(path):
    kf = None
    if not os.environ.get("KFORGE_DISABLE"):
        import kernel_forge as kf  # the plugin, loaded before anything runs
    res = {"grad": {}, "plugin_loaded": "kernel_forge" in sys.modules}
    for name, (_op, fn) in GRAD_CASES.items():
        res["grad"][name] = run_grad_case(name, fn, kf)
    try:
        import transformers  # noqa: F401
    except ImportError:
        res["model"] = None
    else:
        try:
            res["model"] = run_model(kf)
        except Exception:  # reported by the model tests; the gradient cases still count
            import traceback
            res["model"] = {"failed": traceback.format_exc()}
    torch.save(res, path)


if __name__ == "__main__":
    worker(sys.argv[1])
    sys.exit(0)

# ---------------------------------------------------------------------------------------------
# the tests

import pytest  # noqa: E402

sys.path.insert(0, str(HERE))
from test_bit_identical import assert_same_tensor, run_both  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_both(HERE / "test_autograd_model.py", tmp_path_factory.mktemp("autograd"))


def test_runs_are_baseline_and_plugin(runs):
    eager, plugin = runs
    assert eager["plugin_loaded"] is False
    assert plugin["plugin_loaded"] is True
    assert set(eager["grad"]) == set(plugin["grad"]) == set(GRAD_CASES)


def test_grad_cases_cover_the_differentiable_ops():
    wanted = {"aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm",
              "aten::native_group_norm", "aten::native_batch_norm", "aten::gelu", "aten::silu",
              "aten::relu", "aten::add.Tensor", "aten::mul.Tensor", "aten::pow.Tensor_Scalar",
              "aten::mean.dim", "aten::cat", "aten::max_pool2d_with_indices",
              # generic reductions and gathers
              "aten::sum.dim_IntList", "aten::sum", "aten::amax", "aten::max.dim",
              "aten::prod.dim_int", "aten::var.correction", "aten::std.correction",
              "aten::var_mean.correction", "aten::linalg_vector_norm", "aten::logsumexp",
              "aten::embedding", "aten::index_select", "aten::gather"}
    assert wanted <= {op for op, _ in GRAD_CASES.values()}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_backward_bit_identical(runs, name):
    eager, plugin = runs
    e, p = eager["grad"][name], plugin["grad"][name]
    op = GRAD_CASES[name][0]
    # autograd is intact: the outputs have the same grad_fn as in eager
    assert all(g is not None for g in p["grad_fns"]), f"{name}: output without grad_fn: {p['grad_fns']}"
    assert p["grad_fns"] == e["grad_fns"]
    assert len(p["outputs"]) == len(e["outputs"])
    for i, (a, b) in enumerate(zip(e["outputs"], p["outputs"])):
        assert_same_tensor(a, b, f"{name} output {i}")
    assert len(p["grads"]) == len(e["grads"])
    for i, (a, b) in enumerate(zip(e["grads"], p["grads"])):
        assert a is not None and b is not None, f"{name}: gradient {i} missing"
        assert_same_tensor(a, b, f"{name} grad {i}")
    calls = sum(r["calls"] for r in p["rows"] if r["op"] == op and r["intercepted"])
    assert calls > 0, f"{name}: {op} not intercepted in the forward ({sorted({r['op'] for r in p['rows']})})"


# ---------------------------------------------------------------------------------------------
# the model

@pytest.fixture(scope="module")
def model_runs(runs):
    pytest.importorskip("transformers")
    eager, plugin = runs
    assert eager["model"] is not None and plugin["model"] is not None, \
        "transformers imports here but not in the worker subprocesses"
    for mode, res in (("eager", eager["model"]), ("plugin", plugin["model"])):
        assert "failed" not in res, f"building or running the model failed ({mode} run):\n{res['failed']}"
    return eager["model"], plugin["model"]


def test_model_logits_and_gradients_bit_identical(model_runs):
    e, p = model_runs
    print(f"transformers {p['transformers']}: {p['model_class']} ({p['model']})")
    assert p["model"] == e["model"] and p["has_grad_fn"] and e["has_grad_fn"]
    assert torch.isfinite(p["logits"]).all() and torch.isfinite(p["loss"])
    assert p["logits"].shape == (BATCH, SEQ, VOCAB)
    assert_same_tensor(e["logits"], p["logits"], "logits")
    assert_same_tensor(e["loss"], p["loss"], "loss")
    assert list(p["grads"]) == list(e["grads"]) and len(p["grads"]) > 10
    with_grad = 0
    for n in e["grads"]:
        ge, gp = e["grads"][n], p["grads"][n]
        assert (ge is None) == (gp is None), n
        if ge is not None:
            with_grad += 1
            assert_same_tensor(ge, gp, f"grad of {n}")
    # every parameter takes part (embedding, both layers, norms, head)
    assert with_grad == len(e["grads"])


def _calls(rows, op, sig_re=None):
    return sum(r["calls"] for r in rows
               if r["op"] == op and (sig_re is None or re.match(sig_re, r["signature"])))


def test_model_stats(model_runs):
    _, p = model_runs
    rows = p["fwd_rows"]
    assert rows and all(r["intercepted"] and r["device"] == "cpu" for r in rows)
    assert all(r["served"] == 0 and r["fallback"] == r["calls"] for r in rows)
    B, T, H, I = BATCH, SEQ, HIDDEN, INTER
    L, A, norms = p["num_layers"], p["attention_layers"], p["norm_calls"]
    assert A >= 1 and norms >= 2 * L + 1
    t = lambda *dims: r"f32\[" + ",".join(map(str, dims)) + r"\]"  # noqa: E731
    # eager attention: one softmax over [B, heads, T, T] scores per attention layer
    assert _calls(rows, "aten::_softmax") == A
    assert _calls(rows, "aten::_softmax", r"_softmax\(" + t(B, HEADS, T, T) + r", dim=-1") == A
    # the loss: one cross-entropy, so one log_softmax over [B*T, vocab] (HF shifts the labels)
    assert _calls(rows, "aten::_log_softmax") == 1
    assert _calls(rows, "aten::_log_softmax", r"_log_softmax\(f32\[\d+,%d\], dim=1" % VOCAB) == 1
    # every RMSNorm computes x.pow(2).mean(-1, keepdim=True): one each per invocation
    assert _calls(rows, "aten::pow.Tensor_Scalar", r"pow\.Tensor_Scalar\(.*exponent=2\)") == norms
    assert _calls(rows, "aten::mean.dim", r"mean\.dim\(.*dim=\[-1\], keepdim=True") == norms
    # the gated MLP of each layer: act(gate(x)) * up(x), then two residual adds per layer
    act = {"silu": "aten::silu"}.get(p["hidden_act"], "aten::gelu")
    short = act.split("::")[1]
    assert _calls(rows, act, re.escape(short) + r"\(" + t(B, T, I) + r"[,)]") == L
    assert _calls(rows, "aten::mul.Tensor", r"mul\.Tensor\(" + t(B, T, I) + ", " + t(B, T, I) + r"\)") == L
    assert _calls(rows, "aten::add.Tensor", r"add\.Tensor\(" + t(B, T, H) + ", " + t(B, T, H) + ", alpha=1") == 2 * L
    # the backward also runs through intercepted ops (mul for the gradients of mul, ...)
    after = p["all_rows"]
    assert _calls(after, "aten::mul.Tensor") > _calls(rows, "aten::mul.Tensor")
    assert sum(r["calls"] for r in after) > sum(r["calls"] for r in rows)


# ---------------------------------------------------------------------------------------------
# threads

N_THREADS, ITERS = 8, 2000


def test_threads_exact_counts():
    import kernel_forge as kf

    needed = {"aten::relu", "aten::clamp_min", "aten::add.Tensor", "aten::_softmax"}
    if kf.ops_info()["disabled_by_env"] or not needed <= set(kf.intercepted_ops()):
        pytest.skip("this process was started with KFORGE_DISABLE / a KFORGE_OPS without these ops")
    shapes = [(3 + i, 5 + 2 * i) for i in range(N_THREADS)]  # distinct, so counts are attributable
    g = torch.Generator().manual_seed(7)
    data = []
    for s in shapes:
        x, y = torch.randn(s, generator=g), torch.randn(s, generator=g)
        data.append((x, y, torch.relu(x), torch.add(x, y), torch.softmax(x, -1)))
    kf.enable()
    kf.reset_stats()
    start = threading.Barrier(N_THREADS + 1)
    wrong = [0] * N_THREADS
    errors = []
    done = threading.Event()

    def work(i):
        x, y, r_e, a_e, s_e = data[i]
        try:
            start.wait()
            for _ in range(ITERS):
                r, a, s = torch.relu(x), torch.add(x, y), torch.softmax(x, -1)
                if not (torch.equal(r, r_e) and torch.equal(a, a_e) and torch.equal(s, s_e)):
                    wrong[i] += 1
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    def read_stats():  # concurrent readers of the table must not disturb it
        start.wait()
        while not done.is_set():
            kf.stats()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(N_THREADS)]
    reader = threading.Thread(target=read_stats)
    for th in threads + [reader]:
        th.start()
    for th in threads:
        th.join(timeout=300)
    done.set()
    reader.join(timeout=60)
    assert not errors, errors
    assert not any(th.is_alive() for th in threads + [reader])
    assert wrong == [0] * N_THREADS
    rows = kf.stats()
    for a, b in shapes:
        first = rf"\(f32\[{a},{b}\][ ,)]"
        mine = [r for r in rows if re.search(first, r["signature"])]
        got = {}
        for r in mine:
            assert r["device"] == "cpu" and r["intercepted"] and r["served"] == 0, r
            assert r["fallback"] == r["calls"], r
            got[r["op"]] = got.get(r["op"], 0) + r["calls"]
        # relu on CPU is implemented with clamp_min: with no kernel for clamp_min the nested
        # call is passed through without a row
        assert got == {"aten::relu": ITERS, "aten::add.Tensor": ITERS,
                       "aten::_softmax": ITERS}, (a, b, got)
