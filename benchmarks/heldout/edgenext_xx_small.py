"""timm EdgeNeXt-XX-Small, batch 64, 3x224x224, fp16, channels_last (random weights): depthwise convs, channels-last layer norm, split transposed attention (L2-normalized q and k)."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "edgenext_xx_small", source="timm", family=FAMILY)
