"""ResNet-50 inference (torchvision, random weights), batch 64, 224x224, fp16, channels_last."""

from __future__ import annotations

import torch

from . import Workload


def build(device, dtype, tiny=False, layers=None):
    import torchvision

    if layers:
        raise ValueError("resnet50 has no --layers: it is always the whole network")
    model = torchvision.models.resnet50(weights=None).to(device=device, dtype=dtype).eval()
    model = model.to(memory_format=torch.channels_last)
    batch, size = (2, 64) if tiny else (64, 224)

    def make_inputs():
        x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(1))
        return x.to(device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)

    return model, make_inputs


def forward(model, x):
    return model(x)


WORKLOAD = Workload(
    name="resnet50",
    summary="torchvision ResNet-50, batch 64, 3x224x224, channels_last",
    dtype=torch.float16, build=build, forward=forward, tolerance=2e-2,
    requires=("torchvision",))
