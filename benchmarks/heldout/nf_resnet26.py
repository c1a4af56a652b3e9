"""timm NF-ResNet-26, batch 64, 3x224x224, fp16, channels_last (random weights): no batch norm; weight standardization recomputed from the weights in every forward."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "nf_resnet26", source="timm", family=FAMILY)
