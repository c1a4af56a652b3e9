import sys, time, torch
import kernel_forge as kf
from transformers import LlamaConfig, LlamaForCausalLM
import transformers.models.llama.modeling_llama as ml
torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 512, (2, 32))
got = []
orig = ml.apply_rotary_pos_emb
def grab(*a, **k):
    if not got: got.append((a, k))
    return orig(*a, **k)
ml.apply_rotary_pos_emb = grab
with torch.inference_mode():
    for _ in range(30): model(input_ids=ids, use_cache=False, logits_to_keep=1)
    a, k = got[0]
    res = {}
    for rnd in range(6):
        for on in (True, False) if rnd % 2 == 0 else (False, True):
            (kf.enable if on else kf.disable)()
            for _ in range(200): orig(*a, **k)
            t = time.perf_counter_ns()
            for _ in range(2000): orig(*a, **k)
            res.setdefault(on, []).append((time.perf_counter_ns() - t) / 2000 / 1e3)
print({("on" if o else "off"): [round(x, 1) for x in v] for o, v in res.items()})
