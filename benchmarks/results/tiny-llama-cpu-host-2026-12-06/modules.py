import sys, time, torch, collections, statistics
import kernel_forge as kf
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 512, (2, 32))
acc = {True: collections.defaultdict(float), False: collections.defaultdict(float)}
state = {"on": True}
t0s = {}
def pre(m, a):
    t0s[id(m)] = time.perf_counter_ns()
def post(m, a, o):
    acc[state["on"]][type(m).__name__] += time.perf_counter_ns() - t0s[id(m)]
for m in model.modules():
    if type(m).__name__ in ("LlamaRMSNorm", "LlamaMLP", "LlamaAttention", "LlamaRotaryEmbedding", "Embedding", "Linear", "LlamaDecoderLayer", "LlamaModel", "LlamaForCausalLM"):
        m.register_forward_pre_hook(pre); m.register_forward_hook(post)
n = {True: 0, False: 0}
with torch.inference_mode():
    for _ in range(100): model(input_ids=ids, use_cache=False, logits_to_keep=1)
    for k in acc: acc[k].clear()
    for blk in range(200):
        on = blk % 4 in (0, 3)
        state["on"] = on
        (kf.enable if on else kf.disable)()
        for _ in range(10):
            model(input_ids=ids, use_cache=False, logits_to_keep=1); n[on] += 1
kf.enable()
for k in sorted(acc[True], key=lambda k: -acc[True][k]):
    a, b = acc[True][k] / n[True] / 1e3, acc[False][k] / n[False] / 1e3
    print(f"{k:24s} on {a:8.1f} us  off {b:8.1f} us  diff {a-b:+7.1f}")
