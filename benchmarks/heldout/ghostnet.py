"""timm GhostNet 1.0, batch 64, 3x224x224, fp16, channels_last (random weights): ghost modules (cheap depthwise features concatenated and sliced), hard-sigmoid SE."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "ghostnet_100", source="timm", family=FAMILY)
