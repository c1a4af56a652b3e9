"""timm RepVGG-A0 (training-time branches), batch 64, 3x224x224, fp16, channels_last (random weights): 3x3 and 1x1 conv branches and an identity batch norm summed, then ReLU."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "repvgg_a0", source="timm", family=FAMILY)
