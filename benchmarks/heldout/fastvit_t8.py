"""timm FastViT-T8, batch 64, 3x224x224, fp16, channels_last (random weights): reparameterizable conv mixers (batch norm branches summed), GELU, attention-free."""

import _vision

FAMILY = "cnn"

_vision.main(__doc__, "fastvit_t8", source="timm", family=FAMILY)
