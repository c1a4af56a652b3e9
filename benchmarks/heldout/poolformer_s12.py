"""timm PoolFormer-S12, batch 64, 3x224x224, bf16 (random weights): pooling token mixer (avg_pool2d minus its input), group norm, layer scale."""

import _vision

FAMILY = "vit"

_vision.main(__doc__, "poolformer_s12", source="timm", family=FAMILY)
