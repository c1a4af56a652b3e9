"""timm DeiT-Small/16, batch 64, 3x224x224, bf16 (random weights)."""

import _vision

FAMILY = "vit"

_vision.main(__doc__, "deit_small_patch16_224", source="timm", family=FAMILY, sized=True)
