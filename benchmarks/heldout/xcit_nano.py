"""timm XCiT-Nano/16, batch 64, 3x224x224, bf16 (random weights): cross-covariance attention (L2-normalized q and k, a learnt temperature), local patch interaction (depthwise conv, batch norm), layer scale."""

import _vision

FAMILY = "vit"

_vision.main(__doc__, "xcit_nano_12_p16_224", source="timm", family=FAMILY, sized=True)
