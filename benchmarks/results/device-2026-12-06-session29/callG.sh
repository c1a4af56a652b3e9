# Session 28, prepared for the next session: the zoo again after the warm-up's GPU bandwidth fix
# (a738869; every earlier GPU warm-up ranked GPU rows against the host's copy), in three calls
# of about 560 s each, back to back on one machine:
#   bash scripts/device-snapshot.sh && cp benchmarks/results/device-2026-12-06-session28/callG-not-run.sh .snap/callG.sh
#   run(carry=[".snap"], command="cd .snap && bash callG.sh resnet50,mobilenet_v3,efficientnet_b0,vit_base")
#   run(carry=[".snap"], command="cd .snap && bash callG.sh swin_tiny,llama_prefill,llama_decode")
#   run(carry=[".snap"], command="cd .snap && bash callG.sh convnext_tiny,bert_base,whisper_encoder,unet")
# and the held-out models (GPT-2's tanh GELU is now one chain of 8, 8f4cac1):
#   run(carry=[".snap"], command="cd .snap && MODELS_DIR=benchmarks/heldout bash callG.sh gpt2,deit_small,regnety_008,densenet121")
# then merge: python3 benchmarks/zoo/run.py --merge G1/zoo/zoo.json G2/zoo/zoo.json G3/zoo/zoo.json --out merged
nvidia-smi --query-gpu=name --format=csv,noheader; cat COMMIT
bash scripts/device-zoo.sh "${1:?models}"
