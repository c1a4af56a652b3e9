"""timm MobileViT-XS, batch 64, 3x224x224, fp16, channels_last (random weights): inverted residuals with SiLU, and transformer blocks over unfolded patches (layer norm, attention)."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "mobilevit_xs", source="timm", family=FAMILY)
