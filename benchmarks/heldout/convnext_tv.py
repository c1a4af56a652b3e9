"""torchvision ConvNeXt-Tiny, batch 64, 3x224x224, fp16, channels_last (random weights): torchvision's block (permute, LayerNorm, Linear, layer scale), not timm's."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "convnext_tiny", source="torchvision", family=FAMILY)
