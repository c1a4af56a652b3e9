"""transformers Llama decoder prefill (TinyLlama-1.1B's sizes, first 6 layers), prompt 4 x 1024, bf16,
last-position logits as generation asks for them (random weights)."""

import torch

import _zoo

FAMILY = "decoder-prefill"

a = _zoo.parse(__doc__, dtype="bf16", iters=20)
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

if a.tiny:
    config = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                         max_position_embeddings=256)
    batch, seq = 2, 32
else:
    config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=6,
                         num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                         max_position_embeddings=2048, rms_norm_eps=1e-5)
    batch, seq = 4, 1024
model = LlamaForCausalLM(config).eval()
model = model.to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g).to(a.device)
model = _zoo.maybe_compile(model, a)
_zoo.bench("llama_prefill",
           lambda: model(input_ids=input_ids, use_cache=False, logits_to_keep=1).logits,
           a, family=FAMILY, source="transformers", batch=batch, seq=seq,
           layers=config.num_hidden_layers)
