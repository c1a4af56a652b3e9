"""Ops that write more than their schemas say (plugin/writes.c): batch norm in training mode
updates running_mean / running_var in place under a schema that marks them read-only. Kernel
verification, the first-use check, serving and tuning jobs treat them as outputs: a kernel that
leaves them alone is refused, one that updates them is compared and served."""

import copy
import json
import os

import pytest
import torch
import torch.nn as nn

import kernel_forge as kf
from kernel_forge import KernelForgeError, _jobs

from conftest import check_job_cases
from fixtures.host_batch_norm import LAUNCH, frozen_stats_source, updating_source

BN = "aten::native_batch_norm"
STEPS = 5


def batches(n, c, hw, seed):
    g = torch.Generator().manual_seed(seed)
    side = int(hw ** 0.5)
    # a mean far from the running mean's start (0): a frozen running mean shows at once
    return [torch.randn(n, c, side, side, generator=g) * 2 + 3 for _ in range(STEPS)]


def example_args(m, x):
    """native_batch_norm's arguments as nn.BatchNorm2d passes them in training (F.batch_norm)."""
    return (x, m.weight.detach().clone(), m.bias.detach().clone(), m.running_mean.clone(),
            m.running_var.clone(), True, m.momentum, m.eps)


def train(m, xs, plugin=True):
    """STEPS training forwards; the running statistics afterwards."""
    m.train()
    if not plugin:
        kf.disable()
    try:
        with torch.no_grad():
            for x in xs:
                m(x)
    finally:
        kf.enable()
    return m.running_mean.clone(), m.running_var.clone()


def bn_row(x):
    shape = ",".join(str(s) for s in x.shape)
    return next((r for r in kf.stats() if r["op"] == BN and f"f32[{shape}]" in r["signature"]
                 and "training=True" in r["signature"]), None)


def eager_and_plugin(c, seed, source):
    """A BatchNorm2d of c channels: add_kernel(source) for its training signature (None when
    refused: the error), then STEPS training steps with the plugin and STEPS in eager."""
    torch.manual_seed(seed)
    n, hw = 4, 9
    m = nn.BatchNorm2d(c)
    with torch.no_grad():
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-0.5, 0.5)
    xs = batches(n, c, hw, seed)
    ref = copy.deepcopy(m)
    refused = None
    try:
        kf.add_kernel(BN, example_args(m, xs[0]), source(n, c, hw), LAUNCH, allow_slower=True)
    except KernelForgeError as e:
        refused = str(e)
    got = train(m, xs)
    want = train(ref, xs, plugin=False)
    return refused, got, want, bn_row(xs[0])


def test_training_batch_norm_is_intercepted_with_its_hidden_writes():
    # the table names the schema's running_mean / running_var and its training flag
    import ctypes

    from kernel_forge import _native

    for op in (BN, "aten::cudnn_batch_norm"):
        mask, when = ctypes.c_uint32(), ctypes.c_int()
        assert _native.lib().kf_op_hidden_writes(op.encode(), ctypes.byref(mask), ctypes.byref(when))
        args = _jobs.resolve(op)._schema.arguments
        assert [a.name for i, a in enumerate(args) if mask.value >> i & 1] == \
            ["running_mean", "running_var"]
        assert args[when.value].name == "training"
        assert all(a.alias_info is None for a in args)  # what makes the table necessary
    fn = _jobs.resolve(BN)
    x, p = torch.randn(2, 3, 4), torch.ones(3)
    assert _jobs.hidden_writes(fn, [x, p, p, p, p, True, 0.1, 1e-5], {}) == [3, 4]
    assert _jobs.hidden_writes(fn, [x, p, p, p, p, False, 0.1, 1e-5], {}) == []
    assert _jobs.hidden_writes(fn, [x, p, p, None, None, True, 0.1, 1e-5], {}) == []


def test_kernel_that_freezes_running_stats_is_refused_and_training_matches_eager():
    refused, (rm, rv), (rm_ref, rv_ref), _ = eager_and_plugin(5, 11, frozen_stats_source)
    # the running mean after STEPS steps, with whatever kernel add_kernel accepted, is eager's
    assert torch.allclose(rm, rm_ref, atol=1e-5), (rm, rm_ref)
    assert torch.allclose(rv, rv_ref, atol=1e-4), (rv, rv_ref)
    assert refused is not None, "a kernel that leaves running_mean / running_var alone was accepted"
    assert "running_mean" in refused and "which it writes" in refused, refused


def test_kernel_that_updates_running_stats_is_accepted_and_served():
    refused, (rm, rv), (rm_ref, rv_ref), row = eager_and_plugin(6, 12, updating_source)
    assert refused is None, refused
    assert row is not None and row["servable"] and row["served"] >= STEPS - 1, row
    assert torch.allclose(rm, rm_ref, atol=1e-5), (rm, rm_ref)
    assert torch.allclose(rv, rv_ref, atol=1e-4), (rv, rv_ref)


# A kernel that leaves the running statistics alone, planted in a cache without verification
# (kf_candidate_register + kf_candidate_insert, as a corrupted or foreign cache would hold it),
# then a fresh process trains with that cache: its first-use check compares the running stats.
FIRST_USE = """
import ctypes, json, sys, torch, torch.nn as nn, kernel_forge as kf
from kernel_forge import _native
sys.path.insert(0, "tests/python")
from fixtures.host_batch_norm import LAUNCH, frozen_stats_source
from test_hidden_writes import batches, bn_row, example_args, train
torch.manual_seed(13)
n, c, hw = 4, 7, 9
m = nn.BatchNorm2d(c)
xs = batches(n, c, hw, 13)
if sys.argv[1] == "plant":
    args = example_args(m, xs[0])
    key = kf.signature_key("aten::native_batch_norm", *args)
    lib, rt = _native.lib(), _native.runtime()
    log = ctypes.c_void_p()
    src = frozen_stats_source(n, c, hw)
    assert lib.kf_candidate_register(rt, int(key, 16), b"host", src.encode(),
                                     json.dumps(LAUNCH).encode(), ctypes.byref(log)) == 0, _native.errmsg()
    meta = {"atol": 1e-4, "rtol": 1e-4, "eager_us": 10, "kernel_us": 1, "proposer": "planted",
            "source": src, "launch": json.dumps(LAUNCH)}
    out = ctypes.create_string_buffer(33)
    assert lib.kf_candidate_insert(rt, int(key, 16), json.dumps(meta).encode(), out) == 0, _native.errmsg()
else:
    ref = nn.BatchNorm2d(c)
    ref.load_state_dict(m.state_dict())
    rm, rv = train(m, xs)
    rm_ref, rv_ref = train(ref, xs, plugin=False)
    row = bn_row(xs[0])
    print("FIRSTUSE", json.dumps({"mean_ok": torch.allclose(rm, rm_ref, atol=1e-5),
                                  "var_ok": torch.allclose(rv, rv_ref, atol=1e-4),
                                  "served": row["served"], "has_kernel": row["has_kernel"]}))
"""


def test_first_use_check_compares_running_stats(tmp_path):
    from conftest import run_python

    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": "tests/python"}
    p = run_python(["-c", FIRST_USE, "plant"], env)
    assert p.returncode == 0, p.stderr
    p = run_python(["-c", FIRST_USE, "train"], env)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.split("FIRSTUSE")[-1])
    # rejected at its first use (it disagrees on running_mean), eager's values kept every step
    assert res["mean_ok"] and res["var_ok"], res
    assert res["served"] == 0 and not res["has_kernel"], res
    assert "disagrees with eager (argument 3 (written, not returned)" in p.stderr, p.stderr


def test_tuning_job_holds_running_stats_as_written_inputs(tmp_path):
    torch.manual_seed(14)
    x = torch.randn(3, 4, 5, 5)
    w, b = torch.rand(4) + 0.5, torch.randn(4)
    rm, rv = torch.randn(4), torch.rand(4) + 0.5
    rm0, rv0 = rm.clone(), rv.clone()
    args = (x, w, b, rm, rv, True, 0.1, 1e-5)
    job_dir = str(tmp_path / "job")
    r = kf.tune(BN, args, iterations=1, insert=False, job_dir=job_dir)
    assert r["status"] in ("found", "no_correct_kernel", "no_faster_kernel"), r  # host_batch_norm_train
    # the caller's running statistics are as they were: every call ran on copies
    assert torch.equal(rm, rm0) and torch.equal(rv, rv0)
    job = check_job_cases(job_dir, args)  # inputs before the call, outputs after it
    assert [o["alias"] for o in job["outputs"]] == [-1, -1, -1, 3, 4]
    assert [i["name"] for i in job["inputs"]][3:] == ["running_mean", "running_var"]
    # the case's running_mean file holds the value from before the call, its output the update
    read = lambda f: open(os.path.join(job_dir, "cases", f), "rb").read()  # noqa: E731
    case = job["cases"][0]
    assert read(case["inputs"][3]) == rm0.numpy().tobytes()
    want = 0.9 * rm0 + 0.1 * x.mean((0, 2, 3))
    got = torch.frombuffer(bytearray(read(case["outputs"][3])), dtype=torch.float32)
    assert torch.allclose(got, want, atol=1e-6)
    with open(os.path.join(job_dir, "result.json")) as f:
        assert json.load(f)["status"] == r["status"]


def test_eval_batch_norm_writes_nothing_extra(tmp_path):
    x = torch.randn(3, 4, 5, 5)
    p = torch.rand(4) + 0.5
    job = _jobs.write_job(str(tmp_path), kf.signature_key(BN, x, p, p, p, p, False, 0.1, 1e-5),
                          [([x, p, p, p, p, False, 0.1, 1e-5], {})], recorded=[False],
                          random_inputs=1, bench_reps=2)
    assert [o["alias"] for o in job["outputs"]] == [-1, -1, -1]
