"""torchvision ShuffleNetV2 1.0x, batch 64, 3x224x224, fp16, channels_last (random weights): chunk, cat and the channel shuffle (view, transpose, contiguous)."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "shufflenet_v2_x1_0", source="torchvision", family=FAMILY)
