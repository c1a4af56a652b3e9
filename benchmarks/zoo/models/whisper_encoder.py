"""transformers Whisper-base encoder (WhisperModel, SDPA), batch 16 x 30 s of 80-bin log-mel
features (3000 frames -> 1500 positions), bf16 (random weights)."""

import torch

import _zoo

FAMILY = "speech"

a = _zoo.parse(__doc__, dtype="bf16", iters=30)
from transformers import WhisperConfig, WhisperModel  # noqa: E402

if a.tiny:
    config = WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=1,
                           encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=128, decoder_ffn_dim=128,
                           num_mel_bins=80, max_source_positions=100, max_target_positions=64)
    batch, frames = 2, 200
else:
    config = WhisperConfig(d_model=512, encoder_layers=6, decoder_layers=6,
                           encoder_attention_heads=8, decoder_attention_heads=8,
                           encoder_ffn_dim=2048, decoder_ffn_dim=2048, num_mel_bins=80)
    batch, frames = 16, 3000
model = WhisperModel(config).eval()
model = model.to(a.device, a.dtype)
features = torch.randn(batch, config.num_mel_bins, frames).to(a.device, a.dtype)
encoder = _zoo.maybe_compile(model.get_encoder(), a)
_zoo.bench("whisper_encoder", lambda: encoder(features).last_hidden_state, a, family=FAMILY,
           source="transformers", batch=batch, frames=frames, layers=config.encoder_layers)
