"""timm MLP-Mixer-B/16, batch 64, 3x224x224, bf16 (random weights): token-mixing MLPs over transposed activations."""

import _vision

FAMILY = "vit"

_vision.main(__doc__, "mixer_b16_224", source="timm", family=FAMILY, sized=True)
