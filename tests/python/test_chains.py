"""Chain recording (plugin/chains.h): while recording is on, runs of intercepted calls linked by
dataflow that recur are listed by kernel_forge.chains() with their ops, signatures, dataflow and
time share; calls made inside another op's kernel do not break or join a chain."""

import torch

import kernel_forge as kf

from conftest import run_python


def block(x, w):
    h = torch.relu(x + x)  # on the CPU relu calls clamp_min inside: not a chain member
    v = h.pow(2).mean(-1, keepdim=True)
    return torch.softmax(h * w, -1), v


def record(steps, fn, *args):
    kf.reset_stats()
    kf.set_recording(True)
    try:
        for _ in range(steps):
            fn(*args)
    finally:
        kf.set_recording(False)
    return kf.chains()


def test_recurring_block_is_one_chain_with_its_dataflow():
    x, w = torch.randn(64, 256), torch.randn(256)
    chains = record(10, block, x, w)
    assert len(chains) == 1, chains
    (ch,) = chains
    assert ch["ops"] == ["aten::add.Tensor", "aten::relu", "aten::pow.Tensor_Scalar",
                         "aten::mean.dim", "aten::mul.Tensor", "aten::_softmax"]
    # the last run of the thread is still open: counted when the next run starts
    assert ch["calls"] == 9
    # pow reads relu's output; mul reads relu's output and w (from outside); softmax reads mul's
    assert ch["inputs"][2] == [[1, 0]]
    assert ch["inputs"][4] == [[1, 0], None]
    assert ch["inputs"][5] == [[4, 0]]
    assert ch["signatures"][1].startswith("relu(f32[64,256]")
    assert ch["status"] == "recorded" and 0 < ch["share"] <= 1 and ch["time_ms"] > 0
    assert len(ch["keys"]) == 6 and ch["id"]


def test_not_recorded_while_recording_is_off():
    x, w = torch.randn(8, 16), torch.randn(16)
    kf.reset_stats()
    for _ in range(5):
        block(x, w)
    assert kf.chains() == []


def test_unrelated_calls_are_no_chain():
    xs = [torch.randn(32, 32) for _ in range(3)]

    def independent():
        return [torch.relu(x) for x in xs]

    assert record(6, independent) == []


def test_in_place_ops_chain_through_the_tensor_they_write():
    def resnet_tail(y, res):
        y = y.clone()  # a new tensor each step, written by an intercepted copy_
        y.add_(res)
        y.relu_()
        return y

    y, res = torch.randn(4, 8, 5, 5), torch.randn(4, 8, 5, 5)
    chains = record(5, resnet_tail, y, res)
    assert [c["ops"] for c in chains] == [["aten::copy_", "aten::add_.Tensor", "aten::relu_"]], chains
    # add_ writes the copy; relu_ reads what add_ wrote; the previous step's tensor is never
    # taken for this step's (its address is not reused while the recorder may link to it)
    assert chains[0]["inputs"][1:] == [[[0, 0], None], [[1, 0]]]
    assert chains[0]["calls"] == 4


def test_kforge_run_prints_chains(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(
        "import torch\n"
        "x, w = torch.randn(64, 256), torch.randn(256)\n"
        "for _ in range(8):\n"
        "    h = torch.relu(x + x)\n"
        "    torch.softmax(h * w, -1)\n")
    p = run_python(["-m", "kernel_forge.cli", "run", str(script)],
                   {"KFORGE_CACHE_DIR": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stderr
    assert "recurring chains" in p.stdout, p.stdout
    assert "add.Tensor -> relu -> mul.Tensor -> _softmax" in p.stdout, p.stdout
