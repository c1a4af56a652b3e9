# Eight transformers families this project had not run, as a new user would run them on the CPU:
# small configs, random weights, language models moved with .to(torch.bfloat16), vision models
# in f32, torch.inference_mode.
#   python3 model.py NAME          (or NU_MODEL=NAME); NU_OUT=path also times 40 forwards,
#   saves the output and prints one "NU {...}" line with what the plugin served.
import os, sys, time, json, torch
import transformers as T
name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NU_MODEL", "bloom")
torch.manual_seed(0)
LM = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
          vocab_size=1000)


def build():
    ids = dict(input_ids=torch.randint(0, 1000, (2, 64)))
    if name == "bloom":
        m = T.BloomForCausalLM(T.BloomConfig(hidden_size=256, n_layer=2, n_head=4, vocab_size=1000))
    elif name == "gpt_neox":
        m = T.GPTNeoXForCausalLM(T.GPTNeoXConfig(**LM, rotary_pct=0.25))
    elif name == "phi":
        m = T.PhiForCausalLM(T.PhiConfig(**LM, partial_rotary_factor=0.5))
    elif name == "mixtral":
        m = T.MixtralForCausalLM(T.MixtralConfig(**LM, num_key_value_heads=2, num_local_experts=4,
                                                 num_experts_per_tok=2))
    elif name == "falcon":
        m = T.FalconForCausalLM(T.FalconConfig(hidden_size=256, num_hidden_layers=2,
                                               num_attention_heads=4, vocab_size=1000))
    else:
        px = dict(pixel_values=torch.randn(2, 3, 128, 128))
        if name == "mobilevit":
            m = T.MobileViTModel(T.MobileViTConfig(image_size=128))
        elif name == "dinov2":
            m = T.Dinov2Model(T.Dinov2Config(hidden_size=192, num_hidden_layers=4, num_attention_heads=3,
                                             intermediate_size=768, image_size=112, patch_size=14))
            px = dict(pixel_values=torch.randn(2, 3, 112, 112))
        elif name == "resnet":
            m = T.ResNetModel(T.ResNetConfig(depths=[1, 1, 1, 1], hidden_sizes=[64, 128, 256, 512]))
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
    for k in ("logits", "last_hidden_state"):
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
