"""transformers Mistral decoder prefill with eager attention (hidden 2048, 16 heads, 8 KV heads,
4 layers), prompt 2 x 1024, bf16, last-position logits (random weights)."""

import torch

import _zoo

FAMILY = "decoder-prefill"

a = _zoo.parse(__doc__, dtype="bf16", iters=20)
from transformers import MistralConfig, MistralForCausalLM  # noqa: E402

if a.tiny:
    config = MistralConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                           attn_implementation="eager")
    batch, seq = 2, 32
else:
    config = MistralConfig(hidden_size=2048, intermediate_size=7168, num_hidden_layers=4,
                           num_attention_heads=16, num_key_value_heads=8, vocab_size=32000,
                           attn_implementation="eager")
    batch, seq = 2, 1024
model = MistralForCausalLM(config).eval().to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g).to(a.device)
model = _zoo.maybe_compile(model, a)
_zoo.bench("mistral_prefill",
           lambda: model(input_ids=input_ids, use_cache=False, logits_to_keep=1).logits,
           a, family=FAMILY, source="transformers", batch=batch, seq=seq,
           layers=config.num_hidden_layers)
