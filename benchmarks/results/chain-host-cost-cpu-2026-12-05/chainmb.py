# a residual add then a layer norm, 12 times per "forward" (DeiT-small's sizes, batch 2 at 64 px)
import ctypes, os, sys, torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(2, 17, 384)
rs = [torch.randn(2, 17, 384) for _ in range(12)]
ws = [torch.randn(384) for _ in range(12)]
bs = [torch.randn(384) for _ in range(12)]
def fwd():
    h = x
    for i in range(12):
        h = F.layer_norm(h + rs[i], (384,), ws[i], bs[i])
    return h
mode = os.environ.get("CMB_MODE", "")
if mode:
    import kernel_forge as kf
with (torch.no_grad() if os.environ.get("CMB_GRAD") == "no_grad" else torch.inference_mode()):
    for _ in range(20):  # past the first-use checks and the 128 runs a chain's history holds
        fwd()
    if mode:
        if mode == "off":
            kf.disable()
        mk = ctypes.CDLL("/tmp/cgmark.so")
        for _ in range(3):
            fwd()
        mk.cg_start()
        for _ in range(10):
            fwd()
        mk.cg_stop()
        print("served", sum(r["served"] for r in kf.stats()), [(c["ops"], c["state"], c["heads"], c["completed"]) for c in kf.chain_entries()])
