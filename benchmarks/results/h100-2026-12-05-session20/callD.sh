#!/usr/bin/env bash
# Planned (not run): the rest of the zoo at the same commit as calls B and C.
bash scripts/device-zoo.sh llama_prefill,llama_decode,mobilenet_v3
