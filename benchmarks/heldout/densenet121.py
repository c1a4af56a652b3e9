"""torchvision DenseNet-121, batch 64, 3x224x224, fp16, channels_last (random weights): concatenated features, batch norm then in-place ReLU before each conv."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "densenet121", source="torchvision", family=FAMILY)
