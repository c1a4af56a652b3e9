"""transformers BERT-base encoder (BertModel, SDPA), batch 32 x 512 tokens, bf16 (random weights)."""

import torch

import _zoo

FAMILY = "encoder"

a = _zoo.parse(__doc__, dtype="bf16", iters=30)
from transformers import BertConfig, BertModel  # noqa: E402

if a.tiny:
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, vocab_size=512, max_position_embeddings=64)
    batch, seq = 2, 32
else:
    config = BertConfig()  # bert-base-uncased's sizes: 12 layers, hidden 768, 12 heads
    batch, seq = 32, 512
model = BertModel(config).eval()
model = model.to(a.device, a.dtype)
g = torch.Generator().manual_seed(1)
input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g).to(a.device)
attention_mask = torch.ones(batch, seq, dtype=torch.long).to(a.device)
model = _zoo.maybe_compile(model, a)
_zoo.bench("bert_base", lambda: model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state,
           a, family=FAMILY, source="transformers", batch=batch, seq=seq,
           layers=config.num_hidden_layers)
