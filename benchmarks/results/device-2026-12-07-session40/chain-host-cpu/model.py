"""Chain serving's host cost on the CPU (session 40): 16 blocks of x + linear(x) -> layer norm on
[1, 4, 64] (host-bound: the kernels take ~2 us). Warm with `kforge warmup --time-budget 60
--no-check model.py`, then `time.py` (arms in blocks, best of 20 forwards, median of 15 rounds) and
`perf record -g python3 loop.py all|ops` (perf-diff.txt)."""
import torch
class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.ln = torch.nn.LayerNorm(d)
    def forward(self, x):
        return self.ln(x + self.lin(x))
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(*[Block(64) for _ in range(16)]).eval()
x = torch.randn(1, 4, 64)
def run(n):
    with torch.inference_mode():
        for _ in range(n):
            y = model(x)
    return y
if __name__ == "__main__":
    run(40)
