"""timm Res2Net-50 14w-8s, batch 64, 3x224x224, fp16, channels_last (random weights): each bottleneck's channels split in 8 and added in a cascade, cat, batch norm, ReLU."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "res2net50_14w_8s", source="timm", family=FAMILY)
