# Six model families this project had not run, small configs, random weights, float32, CPU.
#   python3 model.py NAME          (or NU_MODEL=NAME); NU_OUT=path also times 40 forwards,
#   saves the output and prints one "NU {...}" line with what the plugin served.
import os, sys, time, json, torch
import transformers as T
name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NU_MODEL", "opt")
torch.manual_seed(0)

def build():
    if name == "opt":
        m = T.OPTForCausalLM(T.OPTConfig(hidden_size=256, ffn_dim=512, num_hidden_layers=2, num_attention_heads=4,
                                         vocab_size=1000, max_position_embeddings=256, word_embed_proj_dim=256))
        return m, dict(input_ids=torch.randint(0, 1000, (2, 64)))
    if name == "bart":
        m = T.BartForConditionalGeneration(T.BartConfig(d_model=256, encoder_layers=2, decoder_layers=2,
                                                        encoder_attention_heads=4, decoder_attention_heads=4,
                                                        encoder_ffn_dim=512, decoder_ffn_dim=512, vocab_size=1000,
                                                        max_position_embeddings=256))
        return m, dict(input_ids=torch.randint(3, 1000, (2, 64)), decoder_input_ids=torch.randint(3, 1000, (2, 32)))
    if name == "deberta":
        m = T.DebertaV2Model(T.DebertaV2Config(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                               intermediate_size=512, vocab_size=1000, max_position_embeddings=256,
                                               relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=64))
        return m, dict(input_ids=torch.randint(0, 1000, (2, 64)))
    if name == "wav2vec2":
        m = T.Wav2Vec2Model(T.Wav2Vec2Config(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=256, conv_dim=(64, 64, 64), conv_stride=(5, 2, 2),
                                             conv_kernel=(10, 3, 3), feat_extract_norm="group",
                                             num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4))
        return m, dict(input_values=torch.randn(2, 4000))
    if name == "segformer":
        m = T.SegformerForSemanticSegmentation(T.SegformerConfig(num_encoder_blocks=4, depths=[1, 1, 1, 1],
                                                                 hidden_sizes=[32, 64, 128, 256], num_attention_heads=[1, 2, 4, 8],
                                                                 decoder_hidden_size=128, num_labels=10))
        return m, dict(pixel_values=torch.randn(2, 3, 64, 64))
    if name == "unet":
        from diffusers import UNet2DModel
        m = UNet2DModel(sample_size=32, in_channels=3, out_channels=3, block_out_channels=(32, 64), layers_per_block=1,
                        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                        norm_num_groups=8, attention_head_dim=16)
        return m, dict(sample=torch.randn(2, 3, 32, 32), timestep=torch.tensor([10, 500]))
    raise SystemExit("unknown model " + name)

model, inputs = build()
model = model.eval()

def fwd():
    with torch.inference_mode():
        out = model(**inputs)
    for k in ("sample", "logits", "last_hidden_state"):
        v = getattr(out, k, None)
        if v is not None:
            return v
    return out[0]

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
