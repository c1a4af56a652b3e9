"""timm Swin-Tiny (patch 4, window 7), batch 64, 3x224x224, bf16 (random weights)."""

import torch

import _zoo

FAMILY = "vit"

a = _zoo.parse(__doc__, dtype="bf16", iters=30)
import timm  # noqa: E402

batch = 2 if a.tiny else 64
model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False).eval()
model = model.to(a.device, a.dtype)
x = torch.randn(batch, 3, 224, 224).to(a.device, a.dtype)
model = _zoo.maybe_compile(model, a)
_zoo.bench("swin_tiny", lambda: model(x), a, family=FAMILY, source="timm", batch=batch,
           shape=[batch, 3, 224, 224])
