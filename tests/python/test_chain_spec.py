"""Chain specs (docs/chains.md): kernel_forge.chains() gives each recorded chain its spec, the
fusable prefix with every member's signature bytes and inputs as head inputs, earlier members'
outputs or external tensors, and the canonical chain bytes; or None with the reason."""

import torch

import kernel_forge as kf


def record(steps, fn, *args):
    kf.reset_stats()
    kf.set_recording(True)
    try:
        for _ in range(steps):
            fn(*args)
    finally:
        kf.set_recording(False)
    return kf.chains()


def rms(x, w):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w


def test_rmsnorm_spec_names_head_inputs_members_and_externals():
    x, w = torch.randn(8, 64), torch.randn(64)
    (ch,) = record(5, rms, x, w)
    spec = ch["spec"]
    assert spec is not None, ch["fusable_reason"]
    assert [m["op"] for m in spec["members"]] == [
        "aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::add.Tensor", "aten::rsqrt",
        "aten::mul.Tensor", "aten::mul.Tensor"]
    ins = [m["inputs"] for m in spec["members"]]
    # add's 1e-6 is a Python number: compiled in, no tensor input
    assert ins == [[["head", 0]], [["member", 0, 0]], [["member", 1, 0]], [["member", 2, 0]],
                   [["head", 0], ["member", 3, 0]], [["member", 4, 0], ["ext", 0]]]
    assert spec["n_head_inputs"] == 1 and spec["n_ext"] == 1 and spec["version"] == 1
    assert spec["members"][3]["signature"].startswith("rsqrt(f32[8,1]")
    # each member's sig_hex starts with its op name (the signature encoding's head)
    for m in spec["members"]:
        raw = bytes.fromhex(m["sig_hex"])
        assert raw[1:1 + raw[0]].decode() == m["op"]
    chain = bytes.fromhex(spec["sig_hex"])
    assert chain.startswith(b"KFCHAIN1") and chain[8] == 6
    # the old "inputs" listing is unchanged: None for anything from outside the chain
    assert ch["inputs"][4] == [None, [3, 0]] and ch["writes"] == [False] * 6


def hf_rms(h, w):  # transformers' LlamaRMSNorm on a bf16 model
    x = h.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * x.to(torch.bfloat16)


def test_the_casts_of_transformers_rmsnorm_are_members():
    # .to(dtype) is one functional _to_copy (its copy_ runs inside it): the whole norm is the spec
    h, w = torch.randn(8, 64).bfloat16(), torch.randn(64).bfloat16()
    (ch,) = record(5, hf_rms, h, w)
    spec = ch["spec"]
    assert spec is not None, ch["fusable_reason"]
    assert ch["spec_first"] == 0 and not any(ch["writes"])
    assert [m["op"] for m in spec["members"]] == [
        "aten::_to_copy", "aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::add.Tensor",
        "aten::rsqrt", "aten::mul.Tensor", "aten::_to_copy", "aten::mul.Tensor"]
    ins = [m["inputs"] for m in spec["members"]]
    assert ins == [[["head", 0]], [["member", 0, 0]], [["member", 1, 0]], [["member", 2, 0]],
                   [["member", 3, 0]], [["member", 0, 0], ["member", 4, 0]], [["member", 5, 0]],
                   [["ext", 0], ["member", 6, 0]]]
    assert spec["members"][0]["signature"].startswith("_to_copy(bf16[8,64], dtype=6")


def test_a_cast_head_is_left_out_of_the_spec():
    # a cast written as copy_ into a fresh tensor heads the recorded chain and writes in place,
    # so the spec starts at pow (spec_first 1) and reads the cast's output as its head input
    def copy_rms(h):
        x = torch.empty(h.shape, dtype=torch.float32).copy_(h)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    (ch,) = record(5, copy_rms, torch.randn(8, 64).bfloat16())
    assert ch["writes"][0] and ch["ops"][0] == "aten::copy_", ch["ops"]
    spec = ch["spec"]
    assert spec is not None, ch["fusable_reason"]
    assert ch["spec_first"] == 1
    assert [m["op"] for m in spec["members"]] == [
        "aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::add.Tensor", "aten::rsqrt",
        "aten::mul.Tensor"]
    ins = [m["inputs"] for m in spec["members"]]
    assert ins == [[["head", 0]], [["member", 0, 0]], [["member", 1, 0]], [["member", 2, 0]],
                   [["head", 0], ["member", 3, 0]]]
    assert spec["n_head_inputs"] == 1 and spec["n_ext"] == 0
    assert spec["members"][0]["signature"].startswith("pow.Tensor_Scalar(f32[8,64]")
    # an in-place head with one member after it keeps its spec (the head's own chain)
    (ch,) = record(5, lambda b: torch.relu(torch.randn(4, 8).add_(b)), torch.randn(4, 8))
    assert ch["spec_first"] == 0 and len(ch["spec"]["members"]) == 2


def test_later_in_place_member_ends_the_fusable_part():
    def tail(y, res):
        z = y * 2.0
        z.add_(res)  # a later member writing in place: the spec stops before it
        return z.relu()

    (ch,) = record(5, tail, torch.randn(4, 8), torch.randn(4, 8))
    assert ch["writes"] == [False, True, False]
    assert ch["spec"] is None and "writes in place" in ch["fusable_reason"]

    def tail2(y, res):
        z = torch.exp(y * 2.0)
        z.add_(res)
        return z.relu()

    (ch,) = record(5, tail2, torch.randn(4, 8), torch.randn(4, 8))
    assert [m["op"] for m in ch["spec"]["members"]] == ["aten::mul.Tensor", "aten::exp"]


def test_same_tensor_twice_is_one_external():
    def f(x, w):
        return (x * w) + w

    (ch,) = record(5, f, torch.randn(4, 8), torch.randn(8))
    assert ch["spec"]["members"][1]["inputs"] == [["member", 0, 0], ["head", 1]]
    assert ch["spec"]["n_ext"] == 0


def test_a_recurrence_view_at_a_new_row_every_step_is_not_predicted():
    """RecurrentGemma's RG-LRU scan: `x[:, t]` is a view of a storage seen before, but at another
    row at every step, so no earlier run's tensor predicts it: the chain's spec must not take it
    as an external (the head's prediction failed at every run, 20 of 20 heads dropped). The
    cut leaves `add -> _to_copy`, its inputs taken at the head's call."""
    def scan(a, x):
        h = torch.zeros(a.shape[0], a.shape[2])
        out = torch.empty_like(x)
        for t in range(x.shape[1]):
            h = a[:, t].float() * h
            h = h + x[:, t].float()
            out[:, t] = h.to(x.dtype)
        return out

    kf.reset_stats()
    kf.set_recording(True)
    try:
        for _ in range(3):
            scan(torch.rand(2, 16, 64).bfloat16(), torch.randn(2, 16, 64).bfloat16())
    finally:
        kf.set_recording(False)
    specs = [c["spec"] for c in kf.chains() if c["spec"]]
    assert specs, kf.chains()
    for sp in specs:
        assert sp["n_ext"] == 0, sp  # nothing predicted from an earlier step's tensors
    assert [m["op"] for m in specs[0]["members"]] == ["aten::add.Tensor", "aten::_to_copy"]
    # a view at a place seen before stays predictable: the same rows every step
    s = torch.randn(2, 8)

    def fixed(x):
        torch.neg(s)  # s seen by a recorded call: its views are known by its storage
        return torch.exp(x * 0.5) + s[1]

    specs = [c["spec"] for c in record(5, fixed, torch.randn(4, 8)) if c["spec"]]
    assert [m["op"] for m in specs[0]["members"]] == ["aten::mul.Tensor", "aten::exp",
                                                      "aten::add.Tensor"]
    assert specs[0]["members"][2]["inputs"][1] == ["ext", 0], specs


def stem(x, rm, rv, w, b):  # a ResNet stem after its convolution, as transformers' ResNet has it
    y = torch.relu(torch.nn.functional.batch_norm(x, rm, rv, w, b, False))
    return torch.nn.functional.max_pool2d(y, 3, 2, 1)


def test_a_pool_with_indices_after_norm_relu_ends_the_spec_there():
    # max_pool2d_with_indices has two outputs, as the norm has three, but it is no norm: relu
    # still joins the norm's epilogue, and the spec ends before the pool
    c = 8
    args = (torch.randn(2, c, 16, 16), torch.randn(c), torch.rand(c) + 0.5, torch.randn(c), torch.randn(c))
    with torch.inference_mode():
        chs = record(5, stem, *args)
    (ch,) = [c for c in chs if "aten::max_pool2d_with_indices" in c["ops"]]
    assert ch["spec"] is not None, ch["fusable_reason"]
    assert [m["op"] for m in ch["spec"]["members"]] == ["aten::native_batch_norm", "aten::relu"]
