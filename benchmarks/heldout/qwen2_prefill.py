"""transformers Qwen2 decoder prefill with SDPA (Qwen2.5-0.5B's sizes: hidden 896, 14 heads, 2 KV
heads, first 8 of 24 layers), prompt 4 x 512, bf16, last-position logits (random weights)."""

import torch

import _zoo

FAMILY = "decoder-prefill"

a = _zoo.parse(__doc__, dtype="bf16", iters=20)
from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402

if a.tiny:
    config = Qwen2Config(hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
    batch, seq = 2, 32
else:
    config = Qwen2Config(hidden_size=896, intermediate_size=4864, num_hidden_layers=8,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                         rms_norm_eps=1e-6, tie_word_embeddings=True)
    batch, seq = 4, 512
model = Qwen2ForCausalLM(config).eval().to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g).to(a.device)
model = _zoo.maybe_compile(model, a)
_zoo.bench("qwen2_prefill",
           lambda: model(input_ids=input_ids, use_cache=False, logits_to_keep=1).logits,
           a, family=FAMILY, source="transformers", batch=batch, seq=seq,
           layers=config.num_hidden_layers)
