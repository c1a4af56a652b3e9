#!/usr/bin/env bash
# Session 20, call B (refused: no machine was lent): Swin, ConvNeXt and ViT after chain serving
# reuses its state (c355c8a) and each row is ranked against its own device's bandwidth (e976de7),
# and UNet, never run. Next session, from a fresh snapshot of HEAD:
#   run(carry=[".snap"], command="cd .snap && bash .diag/callB.sh")
bash scripts/device-zoo.sh swin_tiny,convnext_tiny,vit_base,unet
