"""Gemma 4 and Qwen 3.5 text models from transformers' own configs (`gemma4`, `qwen3_5`), random
weights, the first 4 layers at the real sizes (as benchmarks' baselines/h200_model_ops.py), bf16,
SDPA attention.

- prefill: a batch of 4 prompts of 1024 tokens, the cache built as generate() does, logits of the
  last position only (`logits_to_keep=1`, what generation needs).
- decode: one new token for each of the 4 sequences on top of a 1024-token KV cache. The cache is
  prefilled once; every timed step runs on a fresh copy of it (copied before the step, outside the
  timing), so that every step sees the same state. Qwen 3.5's linear-attention layers keep
  convolution and recurrent states in the cache too: the copy restores those as well.

The first layers of Gemma 4 are sliding-window (512) layers, of Qwen 3.5 three linear-attention
(Gated DeltaNet) layers and one full-attention layer; `layers` takes more.
"""

from __future__ import annotations

import copy
import warnings

import torch

from . import Workload

PREFILL = (4, 1024)   # batch, tokens
TINY_PREFILL = (2, 16)


def _shrink(family, tc):
    """Tiny sizes for CPU tests (every kind of layer kept)."""
    tc.hidden_size, tc.intermediate_size, tc.vocab_size = 64, 128, 512
    tc.num_attention_heads, tc.num_key_value_heads, tc.head_dim = 4, 2, 16
    if family == "qwen3_5":
        tc.linear_key_head_dim = tc.linear_value_head_dim = 16
        tc.linear_num_key_heads, tc.linear_num_value_heads = 2, 4
        tc.layer_types = ["linear_attention", "full_attention"]
    else:
        tc.vocab_size_per_layer_input, tc.hidden_size_per_layer_input = 512, 16
        tc.sliding_window = 8
        tc.layer_types = ["sliding_attention", "full_attention"]


def text_config(family, tiny=False, layers=None):
    import transformers

    cfg = transformers.AutoConfig.for_model(family)
    tc = getattr(cfg, "text_config", None) or cfg
    if tiny:
        _shrink(family, tc)
    n = layers or (2 if tiny else 4)
    types = getattr(tc, "layer_types", None)
    if types and n > len(types):
        raise ValueError(f"{family}: --layers {n} is more than the config's {len(types)} layers")
    tc.num_hidden_layers = n
    if types:
        tc.layer_types = list(types[:n])
    return tc


def _build_model(family, device, dtype, tiny, layers):
    import transformers
    from transformers import AutoModelForCausalLM

    transformers.logging.set_verbosity_error()  # fallback-kernel notices, deprecations
    warnings.filterwarnings("ignore", message=".*past_key_values.*", category=FutureWarning)
    tc = text_config(family, tiny, layers)
    with torch.device(device):  # initialize the weights where they will live
        model = AutoModelForCausalLM.from_config(tc, dtype=dtype, attn_implementation="sdpa")
    return model.to(device).eval(), tc


def _prompt(tc, tiny, device):
    batch, tokens = TINY_PREFILL if tiny else PREFILL
    ids = torch.randint(0, tc.vocab_size, (batch, tokens), generator=torch.Generator().manual_seed(1))
    return ids.to(device)


def prefill_builder(family):
    def build(device, dtype, tiny=False, layers=None):
        model, tc = _build_model(family, device, dtype, tiny, layers)
        return model, lambda: {"input_ids": _prompt(tc, tiny, device)}
    return build


def prefill(model, inputs):
    return model(**inputs, use_cache=True, logits_to_keep=1).logits


def decode_builder(family):
    def build(device, dtype, tiny=False, layers=None):
        model, tc = _build_model(family, device, dtype, tiny, layers)

        def make_inputs():
            out = model(input_ids=_prompt(tc, tiny, device), use_cache=True, logits_to_keep=1)
            return {"cache": out.past_key_values, "input_ids": out.logits.argmax(-1)}  # greedy
        return model, make_inputs
    return build


def decode_reset(inputs):
    return {"input_ids": inputs["input_ids"], "past_key_values": copy.deepcopy(inputs["cache"])}


def decode(model, inputs):
    return model(**inputs, use_cache=True).logits


_SIZES = {"gemma4": "hidden 2304, 8 heads x 256 (4 KV), MLP 9216, vocab 262144, per-layer "
                    "embeddings 256, sliding window 512",
          "qwen3_5": "hidden 4096, 3 Gated-DeltaNet + 1 full-attention layers (16 heads x 256, "
                     "4 KV), MLP 12288, vocab 248320"}


def _workloads():
    out = []
    for family in ("gemma4", "qwen3_5"):
        out.append(Workload(
            name=f"{family}-prefill",
            summary=f"{family} (transformers config), first 4 layers: {_SIZES[family]}; prefill "
                    "[4, 1024], last-position logits",
            dtype=torch.bfloat16, build=prefill_builder(family), forward=prefill, tolerance=5e-2,
            requires=("transformers",)))
        out.append(Workload(
            name=f"{family}-decode",
            summary=f"{family} (transformers config), first 4 layers: {_SIZES[family]}; decode "
                    "1 token x batch 4 on a 1024-token KV cache",
            dtype=torch.bfloat16, build=decode_builder(family), forward=decode, tolerance=5e-2,
            reset=decode_reset, requires=("transformers",)))
    return out


WORKLOADS = _workloads()
