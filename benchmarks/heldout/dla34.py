"""timm DLA-34, batch 64, 3x224x224, fp16, channels_last (random weights): deep layer aggregation (cat of stages, then conv, batch norm, residual add_, ReLU)."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "dla34", source="timm", family=FAMILY)
