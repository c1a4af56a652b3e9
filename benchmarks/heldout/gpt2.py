"""transformers GPT-2 (gpt2-small's sizes: 12 layers, 768, 12 heads), batch 8 x 512 tokens, bf16,
last hidden state (random weights)."""

import torch

import _zoo

FAMILY = "decoder-prefill"

a = _zoo.parse(__doc__, dtype="bf16", iters=20)
from transformers import GPT2Config, GPT2Model  # noqa: E402

if a.tiny:
    config = GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=512, n_positions=64)
    batch, seq = 2, 32
else:
    config = GPT2Config()
    batch, seq = 8, 512
model = GPT2Model(config).eval().to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g).to(a.device)
model = _zoo.maybe_compile(model, a)
_zoo.bench("gpt2", lambda: model(input_ids=input_ids, use_cache=False).last_hidden_state,
           a, family=FAMILY, source="transformers", batch=batch, seq=seq, layers=config.n_layer)
