"""timm RegNetY-800MF, batch 64, 3x224x224, fp16, channels_last (random weights): squeeze-and-excitation (mean, sigmoid, mul) in every block."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "regnety_008", source="timm", family=FAMILY)
