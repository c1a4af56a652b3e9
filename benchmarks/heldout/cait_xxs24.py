"""timm CaiT-XXS24, batch 64, 3x224x224, bf16 (random weights): talking-heads attention (linear maps before and after the softmax), layer scale, class-attention blocks."""

import _vision

FAMILY = "vit"

_vision.main(__doc__, "cait_xxs24_224", source="timm", family=FAMILY, sized=True)
