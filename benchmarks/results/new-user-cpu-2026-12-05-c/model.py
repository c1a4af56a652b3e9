# Ten more model families this project had not run, as a new user would run them on the CPU:
# small configs, random weights, language models moved with .to(torch.bfloat16), vision and
# speech models in f32, torch.inference_mode.
#   python3 model.py NAME          (or NU_MODEL=NAME); NU_OUT=path also times 40 forwards,
#   saves the output and prints one "NU {...}" line with what the plugin served.
import os, sys, time, json, torch
import transformers as T
name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NU_MODEL", "gptj")
torch.manual_seed(0)
LM = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
          vocab_size=1000)


def build():
    ids = dict(input_ids=torch.randint(0, 1000, (2, 64)))
    if name == "gptj":
        m = T.GPTJForCausalLM(T.GPTJConfig(n_embd=256, n_layer=2, n_head=4, rotary_dim=32, vocab_size=1000))
    elif name == "starcoder2":
        m = T.Starcoder2ForCausalLM(T.Starcoder2Config(**LM, num_key_value_heads=2))
    elif name == "mamba":
        m = T.MambaForCausalLM(T.MambaConfig(hidden_size=256, num_hidden_layers=2, vocab_size=1000))
    elif name == "deepseek_v3":
        m = T.DeepseekV3ForCausalLM(T.DeepseekV3Config(
            **LM, moe_intermediate_size=128, n_routed_experts=8, num_experts_per_tok=2, n_group=2,
            topk_group=1, first_k_dense_replace=1, q_lora_rank=64, kv_lora_rank=64,
            qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32, num_key_value_heads=4))
    elif name == "modernbert":
        m = T.ModernBertModel(T.ModernBertConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                                 num_attention_heads=4, vocab_size=1000,
                                                 pad_token_id=0, eos_token_id=1, bos_token_id=2, cls_token_id=3, sep_token_id=4))
    else:
        px = dict(pixel_values=torch.randn(2, 3, 128, 128))
        if name == "clip":
            m = T.CLIPModel(T.CLIPConfig(
                text_config=dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                 num_attention_heads=4, vocab_size=1000),
                vision_config=dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                   num_attention_heads=4, image_size=128, patch_size=16)))
            px = dict(pixel_values=torch.randn(2, 3, 128, 128), **ids)
        elif name == "convnextv2":
            m = T.ConvNextV2Model(T.ConvNextV2Config(depths=[1, 1, 2, 1], hidden_sizes=[48, 96, 192, 384]))
        elif name == "swinv2":
            m = T.Swinv2Model(T.Swinv2Config(image_size=128, embed_dim=48, depths=[1, 1, 2, 1],
                                             num_heads=[2, 4, 8, 16], window_size=4))
        elif name == "levit":
            m = T.LevitModel(T.LevitConfig(image_size=128))
        elif name == "hubert":
            m = T.HubertModel(T.HubertConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                             num_attention_heads=4))
            px = dict(input_values=torch.randn(2, 16000))
        else:
            raise SystemExit("unknown model " + name)
        return m, px
    # as their users run them: bf16 weights, moved with .to()
    return m.to(torch.bfloat16), ids


model, inputs = build()
model = model.eval()


def fwd():
    with torch.inference_mode():
        out = model(**inputs)
    for k in ("logits", "last_hidden_state", "logits_per_image"):
        v = getattr(out, k, None)
        if v is not None:
            return v.float()
    return out[0].float()


for _ in range(int(os.environ.get("NU_N", "30"))):
    y = fwd()
if os.environ.get("NU_OUT"):
    ts = []
    for _ in range(40):
        t = time.perf_counter(); fwd(); ts.append(time.perf_counter() - t)
    ts.sort()
    torch.save(y, os.environ["NU_OUT"])
    info = {}
    if "kernel_forge" in sys.modules and os.environ.get("KFORGE_DISABLE") != "1":
        try:
            import kernel_forge as kf
            rows = kf.stats()
            info = {"served": sum(r["served"] for r in rows),
                    "ops_served": [(r["signature"][:90], r["calls"], r["served"], r["stopped"]) for r in rows if r["served"]],
                    "kernel_not_served": [(r["signature"][:90], r["calls"], r["served"], r["fallback"], r["stopped"]) for r in rows if r.get("has_kernel") and not r["served"]],
                    "chains": [(e["ops"], e["state"], e.get("reason", ""), e.get("stopped", ""), e["heads"], e["completed"], e["dropped"], e["skipped"]) for e in kf.chain_entries()],
                    "cache": [(e["op"], e["signature"][:90], e["served_here"], e.get("disabled"), e.get("disabled_reason", "")) for e in kf.cache_entries()]}
        except Exception as e:
            info = {"err": repr(e)}
    print("NU " + json.dumps({"model": name, "median_ms": round(1e3 * ts[len(ts) // 2], 3), **info}))
