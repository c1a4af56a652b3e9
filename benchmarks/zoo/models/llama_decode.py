"""transformers Llama greedy generation with a growing KV cache (TinyLlama-1.1B's sizes, first 4
layers): batch 8, a 128-token prompt, then 32 new tokens one at a time with past_key_values
(a DynamicCache), bf16 (random weights). One timed call is the whole generation, prefill included."""

import inspect

import torch

import _zoo

FAMILY = "decoder-decode"

a = _zoo.parse(__doc__, dtype="bf16", iters=10, warmup=2)
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

if a.tiny:
    config = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                         max_position_embeddings=256)
    batch, prompt, new_tokens = 2, 16, 8
else:
    config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
                         num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                         max_position_embeddings=2048, rms_norm_eps=1e-5)
    batch, prompt, new_tokens = 8, 128, 32
model = LlamaForCausalLM(config).eval()
model = model.to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
input_ids = torch.randint(0, config.vocab_size, (batch, prompt), generator=g).to(a.device)
# newer transformers name the cache `cache` (argument and output); earlier 5.x `past_key_values`
CACHE_ARG = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
model = _zoo.maybe_compile(model, a)


def generate():
    out = model(input_ids=input_ids, use_cache=True, logits_to_keep=1)
    cache = getattr(out, CACHE_ARG)
    tokens = [out.logits[:, -1].argmax(-1, keepdim=True)]
    for _ in range(new_tokens - 1):
        out = model(input_ids=tokens[-1], use_cache=True, **{CACHE_ARG: cache})  # grows in place
        tokens.append(out.logits[:, -1].argmax(-1, keepdim=True))
    return torch.cat(tokens, dim=1)


_zoo.bench("llama_decode", generate, a, family=FAMILY, source="transformers",
           unit=f"generation of {new_tokens} tokens", batch=batch, prompt=prompt,
           new_tokens=new_tokens, layers=config.num_hidden_layers)
