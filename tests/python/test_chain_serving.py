"""Chain serving (docs/chains.md): a chain kernel attached to a recorded chain's head runs once
at the head and hands each member its precomputed output, only while every call is exactly the
next member with the very tensors expected; anything else falls back to eager. Every case
compares the outputs with eager's (bit-identical where not served, within tolerance where
served) and counts what was served. Each test uses its own shape: entries live as long as the
process."""

import json
import threading

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs

from conftest import run_python

TOL = dict(atol=1e-5, rtol=1e-5)


def rms(x, w):
    """RMSNorm decomposed: pow -> mean -> add(eps) -> rsqrt -> mul(x) -> mul(weight)."""
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w


def eager(fn, *args):
    kf.disable()
    try:
        return fn(*args)
    finally:
        kf.enable()


def kernel_source(rows, cols, scale="1.0f"):
    """The chain's kernel: inputs x, w (the external), then pow, mean, add, rsqrt, mul, mul."""
    return f"""
#include <math.h>
#define KF_R {rows}L
#define KF_C {cols}L
void kf_kernel(const float *x, const float *w, float *p, float *m, float *a, float *r, float *y,
               float *z) {{
    for (long i = 0; i < KF_R; i++) {{
        float s = 0.f;
        for (long j = 0; j < KF_C; j++) {{
            const float v = x[i * KF_C + j] * x[i * KF_C + j];
            p[i * KF_C + j] = v;
            s += v;
        }}
        m[i] = s / (float)KF_C;
        a[i] = m[i] + 1e-6f;
        r[i] = 1.0f / sqrtf(a[i]);
        for (long j = 0; j < KF_C; j++) {{
            y[i * KF_C + j] = x[i * KF_C + j] * r[i];
            z[i * KF_C + j] = y[i * KF_C + j] * w[j] * {scale};
        }}
    }}
}}"""


LAUNCH = {"entry": "kf_kernel", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
          "args": ["const float*", "const float*"] + ["float*"] * 6}


def recorded_rms_chain(x, w):
    """Record rms(x, w) four times; the recorded chain that starts at its pow."""
    kf.reset_stats()
    kf.set_recording(True)
    try:
        for _ in range(4):
            rms(x, w)
    finally:
        kf.set_recording(False)
    (ch,) = [c for c in kf.chains() if c["ops"][0] == "aten::pow.Tensor_Scalar"]
    return ch


def attach(rows, cols, scale="1.0f"):
    """Record rms on [rows, cols], attach the hand-written kernel; returns (spec, x, w)."""
    x, w = torch.randn(rows, cols), torch.randn(cols)
    ch = recorded_rms_chain(x, w)
    assert ch["spec"] is not None, ch["fusable_reason"]
    kf.add_chain_kernel(ch["spec"], kernel_source(rows, cols, scale), LAUNCH, **TOL)
    return ch["spec"], x, w


def entry(spec):
    (e,) = [e for e in kf.chain_entries() if e["sig_hex"] == spec["sig_hex"]]
    return e


def member_counts(spec):
    """(served, fallback) summed over the chain's member signatures."""
    keys = {m_key for m_key in keys_of(spec)}
    rows = [r for r in kf.stats() if r["key"] in keys]
    return sum(r["served"] for r in rows), sum(r["fallback"] for r in rows)


def keys_of(spec):
    out = []
    for c in kf.chains(min_calls=1):
        if c["spec"] and c["spec"]["sig_hex"] == spec["sig_hex"]:
            out = c["keys"]
    return out


def warm(spec, x, w):
    """The first head observes (learns the external w), the second checks against eager."""
    for _ in range(2):
        assert torch.equal(rms(x, w), eager(rms, x, w))  # eager's own results both times
    assert entry(spec)["state"] == "served"


def test_served_in_steady_state_one_kernel_per_forward():
    spec, x, w = attach(5, 64)
    assert entry(spec)["state"] == "checking"
    warm(spec, x, w)
    e0 = entry(spec)
    kf.reset_stats()
    kf.set_recording(True)  # so the member keys are listed again after the reset
    try:
        for _ in range(10):
            torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    finally:
        kf.set_recording(False)
    e1 = entry(spec)
    assert e1["heads"] - e0["heads"] == 10 and e1["completed"] - e0["completed"] == 10
    assert e1["dropped"] == e0["dropped"]
    served, fallback = member_counts(spec)
    # every member call of the 10 forwards was handed out: one chain kernel instead of 6 ops
    assert served == 6 * 10 and fallback == 0, (served, fallback)
    # and other inputs of the same signature: new head inputs, same weight
    x2 = torch.randn(5, 64)
    torch.testing.assert_close(rms(x2, w), eager(rms, x2, w), **TOL)
    assert entry(spec)["completed"] == e1["completed"] + 1


def test_an_op_between_two_members_reads_the_intermediate():
    spec, x, w = attach(6, 64)
    warm(spec, x, w)

    def peek(x, w):
        p = x.pow(2)
        seen = torch.exp(p)  # not the next member: the chain is dropped, p is fully written
        r = torch.rsqrt(p.mean(-1, keepdim=True) + 1e-6)
        return (x * r) * w, seen

    d0 = entry(spec)["dropped"]
    out, seen = peek(x, w)
    ref, ref_seen = eager(peek, x, w)
    torch.testing.assert_close(seen, ref_seen, **TOL)
    torch.testing.assert_close(out, ref, **TOL)
    assert entry(spec)["dropped"] == d0 + 1
    for _ in range(3):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    assert entry(spec)["state"] == "served"


def test_another_branch_after_the_second_member():
    spec, x, w = attach(7, 64)
    warm(spec, x, w)

    def branch(x, w):
        m = x.pow(2).mean(-1, keepdim=True)
        return torch.relu(m - 0.5)  # sub, not add(eps): the chain's third member never comes

    d0 = entry(spec)["dropped"]
    torch.testing.assert_close(branch(x, w), eager(branch, x, w), **TOL)  # mean was handed out
    assert entry(spec)["dropped"] == d0 + 1
    torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)  # the prediction still holds
    assert entry(spec)["completed"] >= 2


def test_weight_replaced_or_updated_in_place():
    spec, x, w = attach(9, 64)
    warm(spec, x, w)
    # replaced: the head still predicts the old weight; the last member sees another tensor,
    # drops the chain and runs eager with the new one
    w2 = torch.randn(64)
    torch.testing.assert_close(rms(x, w2), eager(rms, x, w2), **TOL)
    for _ in range(3):
        torch.testing.assert_close(rms(x, w2), eager(rms, x, w2), **TOL)
    # updated in place: its version counter changed, the head observes instead of predicting
    h0 = entry(spec)["heads"]
    w2.add_(1.0)
    assert torch.equal(rms(x, w2), eager(rms, x, w2))
    assert entry(spec)["heads"] == h0  # no kernel ran on the stale prediction
    torch.testing.assert_close(rms(x, w2), eager(rms, x, w2), **TOL)
    assert entry(spec)["heads"] == h0 + 1


def test_one_chain_at_several_places_with_other_weights():
    # a model runs the same chain at three places per forward, each with its own weight (RMSNorm
    # before attention and before the MLP): the prediction is the run one period ago
    spec, x, w = attach(23, 64)
    warm(spec, x, w)
    ws = [w, torch.randn(64), torch.randn(64)]
    for _ in range(3):  # learning: a miss runs the rest of its chain eager, and is learnt
        for wk in ws:
            torch.testing.assert_close(rms(x, wk), eager(rms, x, wk), **TOL)
    e0 = entry(spec)
    for _ in range(5):
        for wk in ws:
            torch.testing.assert_close(rms(x, wk), eager(rms, x, wk), **TOL)
    e1 = entry(spec)
    assert e1["state"] == "served"
    # every head served but the speed guard's eager ones (one at the 16th head)
    served = e1["completed"] - e0["completed"] + e1["eager_heads"] - e0["eager_heads"]
    assert served == 15 and e1["dropped"] == e0["dropped"], (e0, e1)


def test_a_chain_at_more_places_than_the_guard_waits_for_is_learnt():
    """XCiT runs its residual add -> layer norm at 36 places a forward, each with its own weight:
    in the first forward every checked head predicts the place before's weight and is observed
    from the member that reads it. Those runs complete (they count against a drop for the
    drop-rate guard) and their misses are learning, not failing (they do not stop predicting):
    from the second forward on the chain serves every place."""
    spec, x, _ = attach(21, 64)
    ws = [torch.randn(64) for _ in range(40)]

    def forward():
        for wk in ws:
            torch.testing.assert_close(rms(x, wk), eager(rms, x, wk), **TOL)
        # the forward ends with the head alone: the pending chain drops there
        torch.testing.assert_close(x.pow(2).sum(), eager(lambda: x.pow(2).sum()), **TOL)

    forward()
    e = entry(spec)
    assert e["state"] != "refused" and e["completed"] == 0 and e["mispredicted"] >= 38, e
    for _ in range(2):
        forward()
    e0 = entry(spec)
    for _ in range(2):
        forward()
    e1 = entry(spec)
    assert e1["state"] == "served", e1
    # every place served but the speed guard's eager heads
    served = e1["completed"] - e0["completed"] + e1["eager_heads"] - e0["eager_heads"]
    assert served == 2 * len(ws), (e0, e1)


def test_a_run_dropped_before_it_completes_is_not_checked():
    """Three places per forward, each with its own weight: until the period is learnt, a checked
    head's prediction names the wrong weight and the run drops at the member that reads it. The
    check compares a run's members only once it completes, so those runs cost no comparison:
    a kernel wrong from its first member is refused at the first run that completes."""
    rows, cols = 29, 64
    x, ws = torch.randn(rows, cols), [torch.randn(cols) for _ in range(3)]
    ch = recorded_rms_chain(x, ws[0])
    src = kernel_source(rows, cols).replace("p[i * KF_C + j] = v;", "p[i * KF_C + j] = v * 1.01f;")
    kf.add_chain_kernel(ch["spec"], src, LAUNCH, **TOL)
    spec = ch["spec"]
    for _ in range(3):
        for w in ws:
            assert torch.equal(rms(x, w), eager(rms, x, w))  # eager's results throughout
    e = entry(spec)
    assert e["state"] == "refused" and "member 0" in e["reason"], e
    assert e["heads"] > 2, e  # not refused at the first checked head, which dropped


def test_calls_served_by_a_chain_are_still_captured():
    """A longer chain's job (add -> RMSNorm, when RMSNorm's chain already landed online) needs
    copies of member calls that the landed chain kernel serves: they are taken as eager's are."""
    from kernel_forge import _tuner

    spec, x, w = attach(37, 64)
    warm(spec, x, w)
    keys = keys_of(spec)
    head, last = keys[0], keys[-1]
    _tuner.request_captures(head, 2)
    _tuner.request_captures(last, 2)
    e0 = entry(spec)
    for _ in range(3):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    assert entry(spec)["completed"] - e0["completed"] == 3  # every run served by the chain
    heads = _tuner.take_captures(head, _tuner.n_tensor_args(head))
    lasts = _tuner.take_captures(last, _tuner.n_tensor_args(last))
    assert len(heads) == 2 and len(lasts) == 2, (len(heads), len(lasts))
    for (hx,), (y, hw) in zip(heads, lasts):
        assert torch.equal(hx, x) and torch.equal(hw, w)
        torch.testing.assert_close(y, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6),
                                   **TOL)


def test_weight_data_swapped_without_a_version_bump():
    # `.data =` keeps the tensor and its version and swaps its storage: a head that predicts
    # the weight launches on the old memory (kept alive here), and the member, seeing the
    # weight laid out elsewhere, runs eager
    spec, x, w = attach(39, 64)
    warm(spec, x, w)
    old = w.data
    w.data = torch.randn(64)
    for _ in range(3):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    w.data = old  # back where the first runs saw it: served again
    for _ in range(3):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    assert entry(spec)["state"] == "served"


def test_remembered_runs_do_not_keep_their_externals_alive():
    import gc
    import weakref

    spec, x, w = attach(24, 64)
    warm(spec, x, w)
    w2 = torch.randn(64)
    for _ in range(3):
        torch.testing.assert_close(rms(x, w2), eager(rms, x, w2), **TOL)
    gone = weakref.ref(w2)
    del w2
    gc.collect()
    assert gone() is None  # the chain's memory of it is weak
    torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)  # and still served
    assert entry(spec)["state"] == "served"


def test_module_load_state_dict_between_forwards():
    rows, cols = 10, 64
    spec, x, _ = attach(rows, cols)

    class RMS(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(cols))

        def forward(self, x):
            return rms(x, self.weight)

    mod = RMS()
    with torch.no_grad():
        for _ in range(4):
            torch.testing.assert_close(mod(x), eager(mod, x), **TOL)
        mod.load_state_dict({"weight": torch.randn(cols)})  # copied in place: version changes
        for _ in range(4):
            torch.testing.assert_close(mod(x), eager(mod, x), **TOL)
    assert entry(spec)["state"] == "served"


def test_two_threads_at_once():
    spec, _, w = attach(11, 64)
    errors = []

    def worker(seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(11, 64, generator=g)
        try:
            for _ in range(30):
                with _jobs.bypass():
                    ref = rms(x, w)
                torch.testing.assert_close(rms(x, w), ref, **TOL)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    e0 = entry(spec)
    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    e1 = entry(spec)
    assert e1["state"] == "served"
    assert e1["completed"] - e0["completed"] >= 2 * 25  # each thread observes once, checks once


def test_training_step_with_backward():
    rows, cols = 12, 64
    spec, _, _ = attach(rows, cols)
    x = torch.randn(rows, cols, requires_grad=True)
    w = torch.nn.Parameter(torch.randn(cols))
    for step in range(9):
        out = rms(x, w)
        (out * out).sum().backward()
        gx, gw = x.grad.clone(), w.grad.clone()
        x.grad = w.grad = None
        kf.disable()
        try:
            ref = rms(x, w)
            (ref * ref).sum().backward()
        finally:
            kf.enable()
        torch.testing.assert_close(out, ref, **TOL)
        torch.testing.assert_close(gx, x.grad, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(gw, w.grad, atol=1e-4, rtol=1e-4)
        x.grad = w.grad = None
        if step % 3 == 2:  # the optimizer step after 3 accumulated micro-batches: w changes in
            with torch.no_grad():  # place, so the next forward observes it again (docs/chains.md)
                w.add_(0.01)
    e = entry(spec)
    assert e["state"] == "served" and e["completed"] >= 3, e


def test_intermediate_written_in_place_by_the_user():
    spec, x, w = attach(13, 64)
    warm(spec, x, w)

    def meddle(x, w, hidden):
        p = x.pow(2)
        if hidden:  # a write no interceptor sees (the plugin's own bypass): the version counter does
            with _jobs.bypass():
                p.mul_(2.0)
        else:
            p.mul_(2.0)
        r = torch.rsqrt(p.mean(-1, keepdim=True) + 1e-6)
        return (x * r) * w

    for hidden in (True, False):
        d0 = entry(spec)["dropped"]
        torch.testing.assert_close(meddle(x, w, hidden), eager(meddle, x, w, hidden), **TOL)
        assert entry(spec)["dropped"] == d0 + 1
        for _ in range(2):  # observe, serve again
            torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)


def test_first_use_check_refuses_a_wrong_kernel(caplog):
    spec, x, w = attach(14, 64, scale="1.01f")
    for _ in range(4):
        assert torch.equal(rms(x, w), eager(rms, x, w))  # never served: eager's results
    e = entry(spec)
    assert e["state"] == "refused" and "member 5" in e["reason"] and "mul" in e["reason"], e
    assert "disagrees with eager" in caplog.text and "pow.Tensor_Scalar -> mean.dim" in caplog.text
    assert e["heads"] == 1  # refused at its first check; never launched again


def test_first_use_check_finds_one_wrong_element(caplog):
    """The check copies only the elements whose bits differ from eager's: one off of 1728 is
    enough."""
    spec, x, w = attach(27, 64, scale="(i * KF_C + j == 77 ? 1.5f : 1.0f)")
    for _ in range(4):
        assert torch.equal(rms(x, w), eager(rms, x, w))
    e = entry(spec)
    assert e["state"] == "refused" and "member 5" in e["reason"], e


def test_drop_rate_guard_detaches_a_chain_that_never_completes():
    spec, x, w = attach(15, 64)
    warm(spec, x, w)

    def branch(x, w):
        return torch.relu(x.pow(2).mean(-1, keepdim=True) - 0.5)

    for _ in range(80):
        torch.testing.assert_close(branch(x, w), eager(branch, x, w), **TOL)
    e = entry(spec)
    assert e["state"] == "refused" and "dropped before its last member" in e["reason"], e
    # judged after 32 heads; after the first drops the thread predicts the next and skips the launch
    assert e["heads"] + e["skipped"] >= 32 and e["heads"] <= 8, e


def test_a_head_whose_chain_drops_at_every_other_place_runs_eager_there():
    """One head signature, two places: the chain completes at one and breaks off at the other
    (Swin's unshifted and shifted blocks). The thread learns the period of the outcomes and runs
    the head eager where the chain would drop, instead of launching in vain."""
    spec, x, w = attach(17, 64)
    warm(spec, x, w)

    def other(x, w):  # the head's op and signature, then not the next member
        return torch.relu(x.pow(2).mean(-1, keepdim=True) - 0.5)

    e0 = entry(spec)
    for _ in range(40):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
        torch.testing.assert_close(other(x, w), eager(other, x, w), **TOL)
    e = entry(spec)
    assert e["state"] == "served", e
    # every rms served (but one the speed guard runs eager for its sample)
    assert e["completed"] + e["eager_heads"] - e0["completed"] - e0["eager_heads"] == 40, (e0, e)
    # a few drops while the period is learnt, then the other place's heads skip the kernel
    assert e["dropped"] - e0["dropped"] <= 6 and e["skipped"] - e0["skipped"] >= 34, (e0, e)


def test_an_observed_head_runs_its_members_by_their_own_kernels():
    """Where the chain is predicted to drop, its head is observed (the outcome learnt) with its
    members run as without chains: a member with its own kernel is served by that kernel there,
    not run eager, and the observed run goes on past it."""
    spec, x, w = attach(61, 64)
    warm(spec, x, w)
    n = x.numel()
    kf.add_kernel("aten::pow.Tensor_Scalar", (x, 2),
                  f"void kf_kernel(const float *x, float *y) {{ for (long i = 0; i < {n}L; i++) "
                  "y[i] = x[i] * x[i]; }",
                  {"entry": "kf_kernel", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
                   "args": ["const float*", "float*"]}, allow_slower=True)

    def other(x, w):  # the head's op and signature, then not the next member
        return torch.relu(x.pow(2).mean(-1, keepdim=True) - 0.5)

    for _ in range(10):  # the period learnt: the other place's heads are predicted to drop
        rms(x, w), other(x, w)
    kf.reset_stats()
    kf.set_recording(True)
    try:
        for _ in range(20):
            torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
            torch.testing.assert_close(other(x, w), eager(other, x, w), **TOL)
    finally:
        kf.set_recording(False)
    assert entry(spec)["observed"] >= 20, entry(spec)  # other's heads, each observed
    (row,) = [r for r in kf.stats() if r["signature"].startswith("pow.Tensor_Scalar(f32[61,64]")]
    # rms's pow handed out by the chain kernel, other's by its own kernel (but the speed guards'
    # eager samples)
    assert row["calls"] == 40 and row["served"] >= 36, row


def test_bad_chain_kernels_are_refused():
    spec, x, w = attach(16, 64)
    with pytest.raises(kf.KernelForgeError, match="compile failed"):
        kf.add_chain_kernel(spec, "void kf_kernel(float *x) { nope }", LAUNCH)
    bad = dict(spec, members=[dict(m) for m in spec["members"]])
    bad["members"][1]["inputs"] = [["member", 3, 0]]  # a later member
    with pytest.raises(kf.KernelForgeError, match="an input is not"):
        kf.add_chain_kernel(bad, kernel_source(16, 64), LAUNCH)
    with pytest.raises(kf.KernelForgeError, match="member"):
        kf.add_chain_kernel(spec, kernel_source(16, 64), LAUNCH, outputs=[{"member": 0}])


def record_spec(rows, cols):
    x, w = torch.randn(rows, cols), torch.randn(cols)
    ch = recorded_rms_chain(x, w)
    return ch["spec"]


FRESH = """
import json, torch, kernel_forge as kf
def rms(x, w):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w
ok = {{}}
for rows in ({good}, {bad}):
    x, w = torch.randn(rows, 64), torch.randn(64)
    for _ in range(5):
        y = rms(x, w)
        kf.disable(); ref = rms(x, w); kf.enable()
        ok.setdefault(rows, []).append(bool(torch.allclose(y, ref, atol=1e-5, rtol=1e-5)))
print(json.dumps({{"ok": ok, "entries": kf.chain_entries(), "cache": kf.cache_entries()}}))
"""


def test_chain_entries_from_the_cache_in_a_fresh_process():
    good, bad = 19, 20
    keys = {}
    for rows, scale in ((good, "1.0f"), (bad, "1.01f")):
        spec = record_spec(rows, 64)
        keys[rows] = kf.add_chain_kernel(spec, kernel_source(rows, 64, scale), LAUNCH, insert=True, **TOL)
        assert keys[rows] and entry(spec)["cache_key"] == keys[rows]
    p = run_python(FRESH.format(good=good, bad=bad))
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert all(res["ok"][str(good)]) and all(res["ok"][str(bad)]), res["ok"]
    by_key = {e["cache_key"]: e for e in res["entries"]}
    assert by_key[keys[good]]["state"] == "served" and by_key[keys[good]]["completed"] >= 3
    assert by_key[keys[bad]]["state"] == "refused" and "member 5" in by_key[keys[bad]]["reason"]
    cached = {e["key"]: e for e in res["cache"]}
    assert cached[keys[good]]["op"] == "kforge::chain" and not cached[keys[good]]["disabled"]
    # the wrong one is marked disabled in the cache: no later process checks it again
    kf.reload_cache()
    assert {e["key"]: e for e in kf.cache_entries()}[keys[bad]]["disabled"]


CUDA_SOURCE = """
#define KF_R {rows}L
#define KF_C {cols}L
extern "C" __global__ void kf_kernel(const float *x, const float *w, float *p, float *m, float *a,
                                     float *r, float *y, float *z) {{
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= KF_R) return;
    float s = 0.f;
    for (long j = 0; j < KF_C; j++) {{
        const float v = x[i * KF_C + j] * x[i * KF_C + j];
        p[i * KF_C + j] = v;
        s += v;
    }}
    m[i] = s / (float)KF_C;
    a[i] = m[i] + 1e-6f;
    r[i] = 1.0f / sqrtf(a[i]);
    for (long j = 0; j < KF_C; j++) {{
        y[i * KF_C + j] = x[i * KF_C + j] * r[i];
        z[i * KF_C + j] = y[i * KF_C + j] * w[j];
    }}
}}"""


@pytest.mark.gpu
def test_cuda_graph_capture_serves_only_an_enabled_chain():
    # on the H200: PYTHONPATH=$PWD python3 -m pytest -q tests/python/test_chain_serving.py -k cuda_graph
    rows, cols = 17, 64
    x, w = torch.randn(rows, cols, device="cuda"), torch.randn(cols, device="cuda")
    ch = recorded_rms_chain(x, w)
    launch = dict(LAUNCH, grid=[(rows + 31) // 32, 1, 1], block=[32, 1, 1])
    kf.add_chain_kernel(ch["spec"], CUDA_SOURCE.format(rows=rows, cols=cols), launch,
                        backend="nvrtc", **TOL)
    spec = ch["spec"]

    def captured():
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            rms(x, w)  # warm-up on the capture stream (observes there)
            torch.cuda.synchronize()
            with torch.cuda.graph(g, stream=s):
                out = rms(x, w)
        torch.cuda.current_stream().wait_stream(s)
        return g, out

    # checking: nothing launched under capture, eager is captured
    h0 = entry(spec)["heads"]
    g, out = captured()
    assert entry(spec)["heads"] == h0 and entry(spec)["state"] == "checking"
    x.copy_(torch.randn(rows, cols, device="cuda"))
    g.replay()
    torch.testing.assert_close(out, eager(rms, x, w), **TOL)
    # enabled outside capture (observe, check), then served under capture: the kernel is the graph's
    for _ in range(3):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    assert entry(spec)["state"] == "served"
    g, out = captured()
    assert entry(spec)["heads"] > h0
    x.copy_(torch.randn(rows, cols, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, eager(rms, x, w), **TOL)
