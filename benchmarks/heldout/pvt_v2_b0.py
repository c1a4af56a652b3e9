"""timm PVT-v2-B0, batch 64, 3x224x224, bf16 (random weights): spatial-reduction attention, depthwise conv in the MLP."""

import _vision

FAMILY = "vit"

_vision.main(__doc__, "pvt_v2_b0", source="timm", family=FAMILY)
