#!/usr/bin/env bash
# Session 23, call B: four held-out timm / torchvision classifiers never run on a GPU, the
# warm-up's default options.
#   run(carry=[".snap"], command="cd .snap && bash benchmarks/results/device-2026-12-05-session23/callB.sh")
MODELS_DIR=benchmarks/heldout bash scripts/device-zoo.sh regnety_008,densenet121,deit_small,mobilenet_v2
