"""timm HRNet-W18-Small, batch 64, 3x224x224, fp16, channels_last (random weights): parallel resolutions fused by upsampling and strided convs, batch norm then ReLU."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "hrnet_w18_small", source="timm", family=FAMILY)
