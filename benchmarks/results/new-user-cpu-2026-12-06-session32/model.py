# Eight more model families this project had not run, as a new user would run them on the CPU
# (session 32): small configs, random weights, language models moved with .to(torch.bfloat16),
# FNet (its FFT has no bf16 on the CPU) and the vision models in f32, torch.inference_mode.
#   python3 model.py NAME          (or NU_MODEL=NAME); NU_OUT=path also times 40 forwards,
#   saves the output and prints one "NU {...}" line with what the plugin served.
import os, sys, time, json, torch
import transformers as T
name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NU_MODEL", "t5")
torch.manual_seed(0)
SMALL = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
             vocab_size=1000)


def build():
    ids = dict(input_ids=torch.randint(0, 1000, (2, 64)))
    if name == "fnet":  # Fourier mixing instead of attention: complex tensors through the plugin
        return T.FNetModel(T.FNetConfig(**SMALL)), ids
    if name == "deberta_v2":  # disentangled attention: relative-position gathers
        m = T.DebertaV2Model(T.DebertaV2Config(**SMALL, relative_attention=True, position_buckets=32,
                                               pos_att_type=["p2c", "c2p"]))
    elif name == "t5":  # RMS-style norm in f32, relative position bias added to the scores
        m = T.T5EncoderModel(T.T5Config(d_model=256, d_ff=512, num_layers=2, num_heads=4, d_kv=64,
                                        vocab_size=1000))
    elif name == "xlnet":  # two-stream relative attention, einsum-heavy
        m = T.XLNetModel(T.XLNetConfig(d_model=256, n_layer=2, n_head=4, d_inner=512, vocab_size=1000))
    elif name == "rwkv":  # the WKV recurrence in PyTorch on the CPU
        m = T.RwkvModel(T.RwkvConfig(hidden_size=256, num_hidden_layers=2, vocab_size=1000,
                                     attention_hidden_size=256, intermediate_size=512))
    elif name == "recurrent_gemma":  # RG-LRU recurrence and local attention
        m = T.RecurrentGemmaModel(T.RecurrentGemmaConfig(
            hidden_size=256, intermediate_size=512, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=1, vocab_size=1000, lru_width=256, attention_window_size=32,
            block_types=["recurrent", "recurrent", "attention"]))
    else:
        px = dict(pixel_values=torch.randn(2, 3, 128, 128))
        if name == "segformer":
            m = T.SegformerModel(T.SegformerConfig(hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 2, 1]))
        elif name == "beit":
            m = T.BeitModel(T.BeitConfig(**{k: v for k, v in SMALL.items() if k != "vocab_size"},
                                         image_size=128, patch_size=16,
                                         use_relative_position_bias=True))
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
