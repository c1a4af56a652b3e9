"""torchvision ResNet-50, batch 64, 3x224x224, fp16, channels_last (random weights)."""

import torch

import _zoo

FAMILY = "cnn"

a = _zoo.parse(__doc__, dtype="f16", iters=30)
import torchvision  # noqa: E402  (imported here: only where torchvision is installed)

batch, size = (2, 64) if a.tiny else (64, 224)
model = torchvision.models.resnet50(weights=None).eval()
model = model.to(a.device, a.dtype).to(memory_format=torch.channels_last)
x = torch.randn(batch, 3, size, size).to(a.device, a.dtype).contiguous(memory_format=torch.channels_last)
model = _zoo.maybe_compile(model, a)
_zoo.bench("resnet50", lambda: model(x), a, family=FAMILY, source="torchvision", batch=batch,
           shape=[batch, 3, size, size])
