#!/usr/bin/env bash
# Planned (not run): the zoo's other models at the same commit as call B, for one table.
bash scripts/device-zoo.sh resnet50,bert_base,whisper_encoder,efficientnet_b0
