"""torchvision MobileNetV2, batch 64, 3x224x224, fp16, channels_last (random weights): ReLU6 (hardtanh) after batch norm, inverted residuals."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "mobilenet_v2", source="torchvision", family=FAMILY)
