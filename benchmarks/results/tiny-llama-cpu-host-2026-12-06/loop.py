import sys, time, torch
import kernel_forge as kf
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 512, (2, 32))
on = sys.argv[1] == "on"
(kf.enable if on else kf.disable)()
with torch.inference_mode():
    for _ in range(50):
        model(input_ids=ids, use_cache=False, logits_to_keep=1)
    t = time.time(); n = 0
    while time.time() - t < float(sys.argv[2]):
        model(input_ids=ids, use_cache=False, logits_to_keep=1); n += 1
print(sys.argv[1], n, "forwards", 1e3 * (time.time() - t) / n, "ms")
print([ (c['ops'], c['heads'], c['completed'], c['state']) for c in kf.chain_entries()])
