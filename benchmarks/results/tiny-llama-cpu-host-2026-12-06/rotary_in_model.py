import sys, time, torch, collections
import kernel_forge as kf
from transformers import LlamaConfig, LlamaForCausalLM
import transformers.models.llama.modeling_llama as ml
torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 512, (2, 32))
acc = {True: 0.0, False: 0.0}; n = {True: 0, False: 0}; state = {"on": True}
orig = ml.apply_rotary_pos_emb
def timed(*a, **k):
    t = time.perf_counter_ns(); r = orig(*a, **k); acc[state["on"]] += time.perf_counter_ns() - t; n[state["on"]] += 1
    return r
ml.apply_rotary_pos_emb = timed
with torch.inference_mode():
    for _ in range(100): model(input_ids=ids, use_cache=False, logits_to_keep=1)
    acc = {True: 0.0, False: 0.0}; n = {True: 0, False: 0}
    for blk in range(200):
        on = blk % 4 in (0, 3); state["on"] = on
        (kf.enable if on else kf.disable)()
        for _ in range(10): model(input_ids=ids, use_cache=False, logits_to_keep=1)
kf.enable()
print("apply_rotary_pos_emb per call: on %.1f us, off %.1f us" % (acc[True] / n[True] / 1e3, acc[False] / n[False] / 1e3))
print([(c["ops"][:25], c["heads"], c["completed"], c["dropped"], c["skipped"], c["timed"], c["eager_heads"]) for c in kf.chain_entries()])
