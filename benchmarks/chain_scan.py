"""Which chains do models record, and why are the others not fusable? transformers models built
from small configs on the CPU (random weights, f32), 6 forwards each under inference_mode (or
no_grad) with every op intercepted and recording on, one fresh process per model; prints each
recurring chain with its calls, its share of the recorded time, and its fusable prefix's length
or the reason it has none.

    python3 benchmarks/chain_scan.py [--models llama,bert,vit,swin,convnext,resnet,whisper,...]
                                     [--grad-mode inference|no_grad] [--vision]

The default is every transformers model below: the first seven, then eleven more families users
run (GPT-2, Qwen2, T5, DistilBERT, CLIP's vision tower, SegFormer, DINOv2, Mistral, Gemma, BART,
MobileViT). `--vision`: the timm and torchvision classifiers of benchmarks/heldout/ instead
(timm and torchvision installed; full models, random weights, CNNs channels_last, batch 2 at
96 x 96). Chains from the model's construction (weight init) are listed too, at a share near 0.
"""

import argparse
import os
import subprocess
import sys

MODELS = {
    "llama": "T.LlamaForCausalLM(T.LlamaConfig(hidden_size=256, intermediate_size=688, "
             "num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, vocab_size=1000))"
             "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).logits",
    "bert": "T.BertModel(T.BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, "
            "intermediate_size=1024, vocab_size=1000)); x = torch.randint(0, 1000, (2, 64))"
            "; out = lambda: m(x).last_hidden_state",
    "vit": "T.ViTModel(T.ViTConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3, "
           "intermediate_size=768, image_size=64, patch_size=8)); x = torch.randn(4, 3, 64, 64)"
           "; out = lambda: m(x).last_hidden_state",
    "swin": "T.SwinModel(T.SwinConfig(image_size=64, patch_size=4, embed_dim=32, depths=[2, 2], "
            "num_heads=[2, 4], window_size=4)); x = torch.randn(2, 3, 64, 64)"
            "; out = lambda: m(x).last_hidden_state",
    "convnext": "T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[32, 64], depths=[1, 1], "
                "num_stages=2, image_size=64)); x = torch.randn(2, 3, 64, 64)"
                "; out = lambda: m(x).last_hidden_state",
    "resnet": "T.ResNetModel(T.ResNetConfig(embedding_size=32, hidden_sizes=[64, 128], depths=[1, 1], "
              "layer_type='bottleneck')); x = torch.randn(2, 3, 64, 64)"
              "; out = lambda: m(x).last_hidden_state",
    "whisper": "T.WhisperModel(T.WhisperConfig(d_model=128, encoder_layers=2, decoder_layers=1, "
               "encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=512, "
               "num_mel_bins=80, max_source_positions=100)).get_encoder(); "
               "x = torch.randn(2, 80, 200); out = lambda: m(x).last_hidden_state",
    "gpt2": "T.GPT2Model(T.GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1000))"
            "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).last_hidden_state",
    "qwen2": "T.Qwen2ForCausalLM(T.Qwen2Config(hidden_size=256, intermediate_size=688, "
             "num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, vocab_size=1000))"
             "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).logits",
    "t5": "T.T5EncoderModel(T.T5Config(d_model=128, d_ff=512, num_layers=2, num_heads=4, vocab_size=1000))"
          "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).last_hidden_state",
    "distilbert": "T.DistilBertModel(T.DistilBertConfig(dim=128, hidden_dim=512, n_layers=2, n_heads=4, "
                  "vocab_size=1000)); x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).last_hidden_state",
    "clip_vision": "T.CLIPVisionModel(T.CLIPVisionConfig(hidden_size=128, intermediate_size=512, "
                   "num_hidden_layers=2, num_attention_heads=4, image_size=64, patch_size=8))"
                   "; x = torch.randn(2, 3, 64, 64); out = lambda: m(x).last_hidden_state",
    "segformer": "T.SegformerModel(T.SegformerConfig(hidden_sizes=[32, 64], depths=[1, 1], "
                 "num_encoder_blocks=2, sr_ratios=[2, 1], num_attention_heads=[1, 2], patch_sizes=[7, 3], "
                 "strides=[4, 2], mlp_ratios=[4, 4])); x = torch.randn(2, 3, 64, 64)"
                 "; out = lambda: m(x).last_hidden_state",
    "dinov2": "T.Dinov2Model(T.Dinov2Config(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, "
              "intermediate_size=512, image_size=56, patch_size=14)); x = torch.randn(2, 3, 56, 56)"
              "; out = lambda: m(x).last_hidden_state",
    "mistral": "T.MistralForCausalLM(T.MistralConfig(hidden_size=256, intermediate_size=688, "
               "num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, vocab_size=1000))"
               "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).logits",
    "gemma": "T.GemmaForCausalLM(T.GemmaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, "
             "num_attention_heads=8, num_key_value_heads=2, head_dim=32, vocab_size=1000))"
             "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).logits",
    "bart": "T.BartModel(T.BartConfig(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, "
            "decoder_attention_heads=4, encoder_ffn_dim=512, decoder_ffn_dim=512, vocab_size=1000))"
            "; x = torch.randint(0, 1000, (2, 64)); out = lambda: m(x).last_hidden_state",
    "mobilevit": "T.MobileViTModel(T.MobileViTConfig(image_size=64, hidden_sizes=[32, 48, 64], "
                 "neck_hidden_sizes=[8, 16, 24, 32, 48, 64, 160])); x = torch.randn(2, 3, 64, 64)"
                 "; out = lambda: m(x).last_hidden_state",
}

_TIMM = "__import__('timm').create_model('%s', pretrained=False%s)"
_TV = "getattr(__import__('torchvision').models, '%s')(weights=None)"
_CNN = ("; m = m.to(memory_format=torch.channels_last)"
        "; x = torch.randn(2, 3, 96, 96).contiguous(memory_format=torch.channels_last); out = lambda: m(x)")
_VIT = "; x = torch.randn(2, 3, 96, 96); out = lambda: m(x)"
VISION = {
    "densenet121": _TV % "densenet121" + _CNN,
    "shufflenet_v2": _TV % "shufflenet_v2_x1_0" + _CNN,
    "mobilenet_v2": _TV % "mobilenet_v2" + _CNN,
    "convnext_tv": _TV % "convnext_tiny" + _CNN,
    "resnet50": _TV % "resnet50" + _CNN,
    "regnety_008": _TIMM % ("regnety_008", "") + _CNN,
    "nf_resnet26": _TIMM % ("nf_resnet26", "") + _CNN,
    "ghostnet": _TIMM % ("ghostnet_100", "") + _CNN,
    "efficientnet_b0": _TIMM % ("efficientnet_b0", "") + _CNN,
    "poolformer_s12": _TIMM % ("poolformer_s12", "") + _CNN,
    "pvt_v2_b0": _TIMM % ("pvt_v2_b0", "") + _VIT,
    "deit_small": _TIMM % ("deit_small_patch16_224", ", img_size=96") + _VIT,
    "mixer_b16": _TIMM % ("mixer_b16_224", ", img_size=96") + _VIT,
}


CHILD = r"""
import collections, sys, torch
import kernel_forge as kf
import transformers as T
name, mode, build = sys.argv[1], sys.argv[2], sys.argv[3]
torch.manual_seed(0)
m, rest = build.split(";", 1)
m = eval(m).eval()
exec(rest.strip())
with (torch.inference_mode if mode == "inference" else torch.no_grad)():
    for _ in range(6):
        out()
chs = kf.chains(min_calls=3)
print(f"## {name} ({mode}): {len(kf.stats())} signatures, {len(chs)} chains")
why = collections.Counter()
for c in chs:
    ops = " > ".join(o.replace("aten::", "") for o in c["ops"])
    fus = f"fusable prefix of {len(c['spec']['members'])}" if c["spec"] else "not fusable: " + c["fusable_reason"]
    if not c["spec"]:
        why[c["fusable_reason"]] += c["calls"]
    print(f"  {c['calls']:4d} calls  {c['share'] * 100:5.1f}%  {fus}  [{ops}]")
print("  calls not fusable, by reason:", dict(why))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=None)
    p.add_argument("--grad-mode", default="inference", choices=("inference", "no_grad"))
    p.add_argument("--vision", action="store_true", help="the timm and torchvision classifiers")
    a = p.parse_args()
    table = VISION if a.vision else MODELS
    names = a.models.split(",") if a.models else list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(table)}")
    env = dict(os.environ, KFORGE_INTERCEPT="all", KFORGE_RECORD="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    rc = 0
    for name in names:
        r = subprocess.run([sys.executable, "-c", CHILD, name, a.grad_mode, table[name]], env=env,
                           capture_output=True, text=True)
        print(r.stdout.rstrip() or f"## {name}: failed\n{r.stderr[-2000:]}", flush=True)
        rc |= r.returncode != 0
    return rc


if __name__ == "__main__":
    sys.exit(main())
