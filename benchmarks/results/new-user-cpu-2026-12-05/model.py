# Three model families with q/k norms before rotary (Gemma 3 also casts its norm weights),
# small configs, random weights, bfloat16 (.to()), CPU.
#   python3 model.py NAME          (or NU_MODEL=NAME); NU_OUT=path also times 40 forwards,
#   saves the output and prints one "NU {...}" line with what the plugin served.
import os, sys, time, json, torch
import transformers as T
name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NU_MODEL", "qwen3")
torch.manual_seed(0)

def build():
    kw = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=64, vocab_size=1000, max_position_embeddings=256)
    if name == "gemma3":
        m = T.Gemma3ForCausalLM(T.Gemma3TextConfig(**kw))
    elif name == "qwen3":
        m = T.Qwen3ForCausalLM(T.Qwen3Config(**kw))
    elif name == "olmo2":
        kw.pop("head_dim")
        m = T.Olmo2ForCausalLM(T.Olmo2Config(**kw))
    else:
        raise SystemExit("unknown model " + name)
    # as their users run them: bf16 weights, moved with .to()
    return m.to(torch.bfloat16), dict(input_ids=torch.randint(0, 1000, (2, 64)))

model, inputs = build()
model = model.eval()

def fwd():
    with torch.inference_mode():
        out = model(**inputs)
    for k in ("sample", "logits", "last_hidden_state"):
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
