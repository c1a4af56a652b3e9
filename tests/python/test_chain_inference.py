"""Chain serving under torch.inference_mode (docs/chains.md, "Inference tensors"): activations
there are inference tensors, without a version counter, so while a chain is pending a
thread-local RecordFunction callback watches this thread's calls and drops the chain before any
call that may write. Every case compares with eager (bit-identical where not served, within
tolerance where served), with the hand-written host chain kernel of test_chain_serving.py; each
test uses its own shape (entries live as long as the process)."""

import json

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs, _native

from conftest import run_python
from test_chain_serving import (LAUNCH, TOL, attach, eager, entry, kernel_source, member_counts,
                                record_spec, recorded_rms_chain, rms)


def watched():
    """Bit 0: this thread's writes are watched for a pending chain; bit 1: it has any
    thread-local RecordFunction callback."""
    return _native.lib().kf_chain_thread_watched()


def inference_randn(*shape):
    with torch.inference_mode():
        return torch.randn(*shape)


def warm(spec, x, w):
    """Under inference mode: the first head observes (learns w), the second checks."""
    with torch.inference_mode():
        for _ in range(2):
            assert torch.equal(rms(x, w), eager(rms, x, w))
    assert entry(spec)["state"] == "served"
    assert watched() == 0


def test_served_in_steady_state_under_inference_mode():
    spec, _, w = attach(41, 64)
    x = inference_randn(41, 64)
    assert x.is_inference() and not w.is_inference()  # the weight is a normal tensor, predicted
    warm(spec, x, w)
    e0 = entry(spec)
    kf.reset_stats()
    kf.set_recording(True)  # so the member keys are listed again after the reset
    try:
        with torch.inference_mode():
            for _ in range(10):
                y = rms(x, w)
                assert y.is_inference()  # the tensor kind eager gives
                torch.testing.assert_close(y, eager(rms, x, w), **TOL)
                assert watched() == 0  # the window ended with the chain
    finally:
        kf.set_recording(False)
    e1 = entry(spec)
    assert e1["heads"] - e0["heads"] == 10 and e1["completed"] - e0["completed"] == 10
    assert e1["dropped"] == e0["dropped"]
    served, fallback = member_counts(spec)
    assert served == 6 * 10 and fallback == 0, (served, fallback)  # one kernel instead of 6 ops


def test_inference_weights_at_two_places_are_learnt():
    """A weight made under inference mode, another at each place (LeViT's attention bias, cached
    per block in the first forward): a wrong prediction is observed and learnt, as a normal
    weight's is, not dropped at every head from then on."""
    spec, _, _ = attach(49, 64)
    x = inference_randn(49, 64)
    w1, w2 = inference_randn(64), inference_randn(64)
    with torch.inference_mode():
        for _ in range(3):  # learn both places
            for w in (w1, w2):
                torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
        e0 = entry(spec)
        assert e0["state"] == "served", e0
        for _ in range(10):
            for w in (w1, w2):
                torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    e1 = entry(spec)
    assert e1["state"] == "served", e1
    # a head or two may still run observed while the outcome period settles
    assert e1["completed"] - e0["completed"] >= 18 and e1["dropped"] == e0["dropped"], (e0, e1)


def test_the_watch_lasts_the_chain_window_only():
    spec, _, w = attach(42, 64)
    x = inference_randn(42, 64)
    warm(spec, x, w)
    with torch.inference_mode():
        c0 = entry(spec)["completed"]
        p = x.pow(2)  # the head: served, the chain pending
        assert watched() == 3
        m = p.mean(-1, keepdim=True)
        y = (x * torch.rsqrt(m + 1e-6)) * w
        assert watched() == 0 and entry(spec)["completed"] == c0 + 1  # completed: callback removed
        torch.testing.assert_close(y, eager(rms, x, w), **TOL)
        d0 = entry(spec)["dropped"]
        m = x.pow(2).mean(-1, keepdim=True)
        assert watched() == 3
        z = torch.relu(m - 0.5)  # another branch after the second member: dropped
        assert watched() == 0 and entry(spec)["dropped"] == d0 + 1
        torch.testing.assert_close(z, eager(lambda x: torch.relu(x.pow(2).mean(-1, keepdim=True) - 0.5), x),
                                   **TOL)


def test_an_op_between_two_members_reads_the_intermediate():
    spec, _, w = attach(43, 64)
    x = inference_randn(43, 64)
    warm(spec, x, w)

    def peek(x, w):
        p = x.pow(2)
        seen = torch.exp(p)  # not the next member: dropped, p is fully written
        r = torch.rsqrt(p.mean(-1, keepdim=True) + 1e-6)
        return (x * r) * w, seen

    with torch.inference_mode():
        d0 = entry(spec)["dropped"]
        out, seen = peek(x, w)
        ref, ref_seen = eager(peek, x, w)
        torch.testing.assert_close(seen, ref_seen, **TOL)
        torch.testing.assert_close(out, ref, **TOL)
        assert entry(spec)["dropped"] == d0 + 1 and watched() == 0
        for _ in range(2):
            torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    assert entry(spec)["state"] == "served"


# writes by ops the plugin does not intercept (plugin/oplist.c has neither): only the watch sees them
# (their arguments are made before the head: nothing else between the head and the write)
WRITES = {
    "index_fill_": lambda t, aux: t.index_fill_(1, aux["idx"], 3.0),
    "masked_scatter_": lambda t, aux: t.masked_scatter_(aux["mask"], aux["src"]),
    "slice index_fill_": lambda t, aux: t[:, 2:6].index_fill_(1, aux["idx2"], -1.0),
}


def meddle(x, w, target, how, aux):
    p = x.pow(2)  # the head
    WRITES[how](p if target == "intermediate" else x, aux)
    r = torch.rsqrt(p.mean(-1, keepdim=True) + 1e-6)  # p must be read as written
    return (x * r) * w  # x must be read as written


@pytest.mark.parametrize("target", ["intermediate", "head input"])
def test_a_write_between_two_chain_calls_drops_the_chain(target):
    rows = 44 if target == "intermediate" else 45
    spec, _, w = attach(rows, 64)
    x = inference_randn(rows, 64)
    warm(spec, x, w)
    with torch.inference_mode():
        aux = {"idx": torch.tensor([1, 5, 9]), "idx2": torch.tensor([0, 2]),
               "mask": torch.rand(rows, 64) > 0.5, "src": torch.full((rows * 64,), 0.25)}
        for how in WRITES:
            d0, c0 = entry(spec)["dropped"], entry(spec)["completed"]
            a, b = x.clone(), x.clone()
            out = meddle(a, w, target, how, aux)
            ref = eager(meddle, b, w, target, how, aux)
            assert torch.equal(a, b)
            torch.testing.assert_close(out, ref, **TOL)
            # the served values (read before the write) would differ from eager's
            assert not torch.allclose(out, rms(x, w), **TOL), how
            assert entry(spec)["dropped"] == d0 + 1 and entry(spec)["completed"] == c0 + 1, how
            assert watched() == 0
            for _ in range(2):  # still served afterwards
                torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)


def test_threads_each_watched_and_one_exiting_with_a_chain_pending():
    import threading

    spec, _, w = attach(48, 64)
    errors, states = [], []

    def worker(seed, leave_pending):
        try:
            with torch.inference_mode():
                x = torch.randn(48, 64, generator=torch.Generator().manual_seed(seed))
                for _ in range(20):
                    with _jobs.bypass():  # this thread's reference (kf.disable() is every thread's)
                        ref = rms(x, w)
                    torch.testing.assert_close(rms(x, w), ref, **TOL)
                if leave_pending:
                    x.pow(2)  # the head: pending (and watched) as the thread ends
                    states.append(watched())
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    e0 = entry(spec)
    threads = [threading.Thread(target=worker, args=(s, s == 2)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert states == [3] and watched() == 0  # the other threads' watches are not this one's
    e1 = entry(spec)
    assert e1["state"] == "served" and e1["completed"] - e0["completed"] >= 2 * 17, (e0, e1)
    x = inference_randn(48, 64)
    with torch.inference_mode():
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)


def test_normal_tensors_under_no_grad_are_not_watched():
    spec, _, w = attach(46, 64)
    x = torch.randn(46, 64)
    with torch.no_grad():
        for _ in range(2):
            rms(x, w)
        assert entry(spec)["state"] == "served"
        p = x.pow(2)  # pending, every tensor held by its version counter: no callback
        assert watched() == 0
        (x * torch.rsqrt(p.mean(-1, keepdim=True) + 1e-6)) * w


FRESH = """
import json, torch, torch.nn.functional as F, kernel_forge as kf
def rms(x, w):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w
def meddle(x, w, how, mask, src, idx, bn_in, var):
    p = x.pow(2)
    if how == "index_fill_":
        p.index_fill_(1, idx, 3.0)
    elif how == "masked_scatter_":
        x.masked_scatter_(mask, src)
    else:  # batch norm in training mode: its running mean is a view of the head input x
        F.batch_norm(bn_in, x.view(-1), var, training=True)
    r = torch.rsqrt(p.mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w
def ref(fn, *a):
    kf.disable()
    try:
        return fn(*a)
    finally:
        kf.enable()
res = {"ok": [], "served": []}
w = torch.randn(64)
with torch.inference_mode():
    x = torch.randn(ROWS, 64)
    mask, src = torch.rand(ROWS, 64) > 0.5, torch.full((ROWS * 64,), 0.25)
    idx, bn_in = torch.tensor([1, 5, 9]), torch.rand(4, ROWS * 64) + 1.0
    entry = lambda: [e for e in kf.chain_entries() if e["sig_hex"] == SIG][0]
    for _ in range(6):
        res["ok"].append(bool(torch.allclose(rms(x, w), ref(rms, x, w), atol=1e-5, rtol=1e-5)))
    res["served"] = [entry()["state"], entry()["completed"]]
    for how in ("index_fill_", "masked_scatter_", "batch_norm"):
        d0 = entry()["dropped"]
        a, b = x.clone(), x.clone()
        va, vb = torch.ones(ROWS * 64), torch.ones(ROWS * 64)
        out = meddle(a, w, how, mask, src, idx, bn_in, va)
        exp = ref(meddle, b, w, how, mask, src, idx, bn_in, vb)
        res["ok"].append(bool(torch.equal(a, b) and torch.equal(va, vb) and
                              torch.allclose(out, exp, atol=1e-5, rtol=1e-5)))
        res[how] = entry()["dropped"] - d0
print(json.dumps(res))
"""


def test_intercept_cached_in_a_fresh_process():
    # KFORGE_INTERCEPT=cached (the default outside the suite): only the chain's member ops are
    # intercepted, the writes (and batch norm) are not
    rows = 47
    spec = record_spec(rows, 64)
    kf.add_chain_kernel(spec, kernel_source(rows, 64), LAUNCH, insert=True, **TOL)
    code = FRESH.replace("ROWS", str(rows)).replace("SIG", repr(spec["sig_hex"]))
    p = run_python(code, env_extra={"KFORGE_INTERCEPT": "cached"})
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert all(res["ok"]), res
    assert res["served"][0] == "served" and res["served"][1] >= 4, res
    assert res["index_fill_"] == 1 and res["masked_scatter_"] == 1 and res["batch_norm"] == 1, res


@pytest.mark.gpu
def test_cuda_chain_served_under_inference_mode():
    # on the H200: PYTHONPATH=$PWD python3 -m pytest -q tests/python/test_chain_inference.py -k cuda
    from test_chain_serving import CUDA_SOURCE

    rows, cols = 49, 64
    x, w = torch.randn(rows, cols, device="cuda"), torch.randn(cols, device="cuda")
    ch = recorded_rms_chain(x, w)
    launch = dict(LAUNCH, grid=[(rows + 31) // 32, 1, 1], block=[32, 1, 1])
    kf.add_chain_kernel(ch["spec"], CUDA_SOURCE.format(rows=rows, cols=cols), launch, backend="nvrtc", **TOL)
    spec = ch["spec"]
    with torch.inference_mode():
        xi = torch.randn(rows, cols, device="cuda")
    warm(spec, xi, w)
    c0 = entry(spec)["completed"]
    with torch.inference_mode():
        for _ in range(5):
            torch.testing.assert_close(rms(xi, w), eager(rms, xi, w), **TOL)
        assert entry(spec)["completed"] == c0 + 5
        aux = {"idx": torch.tensor([1, 5, 9], device="cuda")}
        d0 = entry(spec)["dropped"]
        a, b = xi.clone(), xi.clone()
        out = meddle(a, w, "intermediate", "index_fill_", aux)
        torch.testing.assert_close(out, eager(meddle, b, w, "intermediate", "index_fill_", aux), **TOL)
        assert entry(spec)["dropped"] == d0 + 1 and watched() == 0
