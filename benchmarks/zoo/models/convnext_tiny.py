"""timm ConvNeXt-Tiny, batch 64, 3x224x224, bf16, channels_last (random weights)."""

import torch

import _zoo

FAMILY = "cnn"

a = _zoo.parse(__doc__, dtype="bf16", iters=30)
import timm  # noqa: E402

batch, size = (2, 64) if a.tiny else (64, 224)
model = timm.create_model("convnext_tiny", pretrained=False).eval()
model = model.to(a.device, a.dtype).to(memory_format=torch.channels_last)
x = torch.randn(batch, 3, size, size).to(a.device, a.dtype).contiguous(memory_format=torch.channels_last)
model = _zoo.maybe_compile(model, a)
_zoo.bench("convnext_tiny", lambda: model(x), a, family=FAMILY, source="timm", batch=batch,
           shape=[batch, 3, size, size])
