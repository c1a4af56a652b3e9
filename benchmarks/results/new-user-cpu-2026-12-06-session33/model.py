# Four convolutional families through transformers, as their users build them, on the CPU
# (session 33): batch norms followed by their activations, none run by this project's CPU
# sweeps before. Small configs, random weights, f32, torch.inference_mode.
#   python3 model.py NAME          (or NU_MODEL=NAME); NU_OUT=path also times 40 forwards,
#   saves the output and prints one "NU {...}" line with what the plugin served.
import os, sys, time, json, torch
import transformers as T
name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NU_MODEL", "resnet")
torch.manual_seed(0)


def build():
    if name == "resnet":  # bottlenecks: conv -> bn -> relu, the residual added in place
        return T.ResNetModel(T.ResNetConfig(embedding_size=32, hidden_sizes=[64, 128, 256, 512],
                                            depths=[1, 1, 2, 1], layer_type="bottleneck"))
    if name == "regnet":  # grouped convs, squeeze-and-excitation
        return T.RegNetModel(T.RegNetConfig(embedding_size=32, hidden_sizes=[48, 96, 192, 384],
                                            depths=[1, 1, 2, 1], groups_width=16, layer_type="y"))
    if name == "mobilenet_v2":  # inverted residuals, ReLU6
        return T.MobileNetV2Model(T.MobileNetV2Config(image_size=128, depth_multiplier=0.5))
    if name == "efficientnet":  # depthwise convs, SiLU, squeeze-and-excitation
        return T.EfficientNetModel(T.EfficientNetConfig(image_size=128, width_coefficient=1.0,
                                                        depth_coefficient=0.5, hidden_dim=1280))
    raise SystemExit("unknown model " + name)


model = build().eval()
inputs = dict(pixel_values=torch.randn(4, 3, 128, 128))
# trained-looking batch norms: random running stats and affine, as a checkpoint has them
g = torch.Generator().manual_seed(1)
for m in model.modules():
    if isinstance(m, torch.nn.BatchNorm2d):
        c = m.num_features
        m.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
        m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
        m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
        m.bias.data.copy_(torch.rand(c, generator=g) - 0.5)


def fwd():
    with torch.inference_mode():
        out = model(**inputs)
    return out.last_hidden_state.float()


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
                    "chains": [(e["ops"], e["state"], e.get("reason", ""), e.get("stopped", ""), e["heads"], e["completed"], e["dropped"], e["skipped"]) for e in kf.chain_entries()],
                    "cache": [(e["op"], e["signature"][:90], e["served_here"], e.get("disabled"), e.get("disabled_reason", "")) for e in kf.cache_entries()]}
        except Exception as e:
            info = {"err": repr(e)}
    print("NU " + json.dumps({"model": name, "median_ms": round(1e3 * ts[len(ts) // 2], 3), **info}))
