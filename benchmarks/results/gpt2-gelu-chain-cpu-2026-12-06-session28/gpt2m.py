"""GPT-2 at a medium size on the CPU (4 layers, 256 wide, 2 x 128 tokens), f32; in-process A/B."""
import sys, time, statistics, torch
from transformers import GPT2Config, GPT2Model
torch.manual_seed(0)
cfg = GPT2Config(n_embd=256, n_layer=4, n_head=4, vocab_size=1024, n_positions=256)
model = GPT2Model(cfg).eval()
ids = torch.randint(0, 1024, (2, 128))
fwd = lambda: model(input_ids=ids, use_cache=False).last_hidden_state
plugin = "--plugin" in sys.argv
if plugin:
    import kernel_forge as kf
with torch.inference_mode():
    for _ in range(8):
        y = fwd()
    if plugin and "--ab" in sys.argv:
        t = {"on": [], "off": []}
        for b in range(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 12):
            side = "on" if b % 4 in (0, 3) else "off"
            (kf.enable if side == "on" else kf.disable)()
            for _ in range(5):
                t0 = time.perf_counter(); fwd(); t[side].append(time.perf_counter() - t0)
        kf.enable()
        on, off = statistics.median(t["on"]), statistics.median(t["off"])
        ref = (kf.disable(), fwd(), kf.enable())[1]
        print(f"on {on*1e3:.3f} ms off {off*1e3:.3f} ms speedup {off/on:.3f}; max err {(fwd() - ref).abs().max().item():.2e}")
        [print({k: v for k, v in c.items() if k not in ("spec", "sig_hex")}) for c in kf.chain_entries()]
