"""The chain speed guard (docs/chains.md): a served chain kernel's time at the head is sampled
(the first 3 served heads, then one in KFORGE_SAMPLE_EVERY) against the sum of its members'
fastest calls (eager, or by their own kernels where those are faster); one not faster by the per-op guard's margin is detached (refused, stopped
"slower", one warning) and its members run eager from then on. Every forward is compared with
eager's. Each test uses its own shape: entries live as long as the process."""

import json

import pytest
import torch

import kernel_forge as kf

from conftest import run_python
from test_chain_serving import (CUDA_SOURCE, LAUNCH, TOL, attach, eager, entry, kernel_source,
                                recorded_rms_chain, rms, warm)

EARLY_SAMPLES = 4  # plugin/plugin.h KF_SPEED_EARLY_SAMPLES: a kernel over 2x slower goes then
MIN_SAMPLES = 16   # KF_SPEED_MIN_SAMPLES


def slow_source(rows, cols, spin=400000):
    """The chain's kernel, correct, with a busy loop in front: far slower than its members."""
    head = "float *z) {"
    spin_loop = (f"\n    volatile float kf_spin = 0.f;\n"
                 f"    for (long k = 0; k < {spin}L; k++) kf_spin = kf_spin + 1.0f;")
    return kernel_source(rows, cols).replace(head, head + spin_loop, 1)


def attach_slow(rows, cols):
    """Record rms on [rows, cols] and attach the slow kernel (test_chain_serving.attach's way)."""
    x, w = torch.randn(rows, cols), torch.randn(cols)
    ch = recorded_rms_chain(x, w)
    assert ch["spec"] is not None, ch["fusable_reason"]
    kf.add_chain_kernel(ch["spec"], slow_source(rows, cols), LAUNCH, **TOL)
    return ch["spec"], x, w


def test_a_chain_kernel_slower_than_its_members_is_detached(caplog):
    spec, x, w = attach_slow(31, 64)
    warm(spec, x, w)  # observed, then checked: it is correct, so served
    assert entry(spec)["timed"] == 0  # the first-use check is no sample (it poisons, compares)
    for _ in range(40):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    e = entry(spec)
    # heads 1, 2, 3 and 32 were timed (16 ran the members eager, for warm samples): detached at
    # the early verdict, on the 4th sample; the check's head and 31 served ones ran the kernel
    assert e["state"] == "refused" and e["stopped"] == "slower", e
    assert e["timed"] == EARLY_SAMPLES and e["eager_heads"] == 1 and e["heads"] == 1 + 31, e
    assert e["reason"].startswith("slower than its members: "), e
    assert e["kernel_us"] > 2 * e["eager_us"] > 0, e
    assert caplog.text.count("is slower here than its members run without it") == 1, caplog.text
    assert "chain pow.Tensor_Scalar -> mean.dim" in caplog.text
    (ch,) = [c for c in kf.chains(min_calls=1) if c["spec"] and c["spec"]["sig_hex"] == spec["sig_hex"]]
    assert ch["status"] == "refused" and ch["entry"]["reason"] == e["reason"], ch
    # from then on the members run eager: eager's own results, no kernel
    for _ in range(4):
        assert torch.equal(rms(x, w), eager(rms, x, w))
    assert entry(spec)["heads"] == e["heads"]


def test_a_fast_chain_kernel_stays_served():
    spec, x, w = attach(32, 64)
    warm(spec, x, w)
    for _ in range(3 + 20 * 16):  # heads 1..3 and every 16th timed, 1 in 4 of those run eager
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    e = entry(spec)
    assert e["state"] == "served" and e["stopped"] == "" and e["reason"] == "", e
    assert e["timed"] >= MIN_SAMPLES, e
    assert 0 < e["kernel_us"] < e["eager_us"], e  # one loop instead of six dispatched ops
    # the members had their eager samples from the recording; warm ones are taken all the same
    assert e["eager_heads"] >= 4, e


EVICTED = """
import json, sys
sys.path.insert(0, "tests/python")
import torch, kernel_forge as kf
from test_chain_serving import attach, warm, rms, eager, entry
spec, x, w = attach(33, 64)
warm(spec, x, w)
before = entry(spec)
# 48 other signatures through a 16-slot table: the members' slots are recycled, and their eager
# samples with them, while the chain stays served
for n in range(1, 49):
    torch.neg(torch.ones(n))
gone = entry(spec)
outs = [rms(x, w) for _ in range(40)]  # compared afterwards: no other signature meanwhile
after = entry(spec)
ref = eager(rms, x, w)
kf.disable()
ok = [bool(torch.allclose(o, ref, atol=1e-5, rtol=1e-5)) for o in outs]
print(json.dumps({"before": before, "gone": gone, "after": after, "ok": ok}))
"""


def test_a_head_runs_its_members_eager_when_their_samples_are_gone(tmp_path):
    # a cache of its own: the suite's shared one holds earlier tests' entries, whose slots are
    # pinned and would leave a 16-slot table no room to record the chain
    p = run_python(EVICTED, {"KFORGE_SIGNATURES": "16", "KFORGE_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert all(res["ok"]), res["ok"]
    before, gone, after = res["before"], res["gone"], res["after"]
    assert before["eager_us"] > 0 and gone["eager_us"] == -1, res
    # served head 1 timed the kernel; head 2 ran the members eager (timed) instead; then served
    assert after["state"] == "served" and after["eager_heads"] == 1, after
    assert after["eager_us"] > 0 and after["timed"] == 4, after  # heads 1, 3, 16, 32
    assert after["heads"] == gone["heads"] + 39, after


@pytest.mark.gpu
def test_a_slow_cuda_chain_kernel_is_detached_on_its_event_samples():
    # on the H200: PYTHONPATH=$PWD python3 -m pytest -q tests/python/test_chain_guard.py -k cuda
    rows, cols = 35, 64
    x, w = torch.randn(rows, cols, device="cuda"), torch.randn(cols, device="cuda")
    ch = recorded_rms_chain(x, w)
    spec = ch["spec"]
    # about 2 ms of spinning per launch (the H200 ran a 200000-step volatile loop in 37 us)
    spin = ("if (i >= KF_R) return;\n    const long long kf_t0 = clock64();\n"
            "    while (clock64() - kf_t0 < 4000000LL) {}")
    src = CUDA_SOURCE.format(rows=rows, cols=cols).replace("if (i >= KF_R) return;", spin, 1)
    launch = dict(LAUNCH, grid=[(rows + 31) // 32, 1, 1], block=[32, 1, 1])
    kf.add_chain_kernel(spec, src, launch, backend="nvrtc", **TOL)
    warm(spec, x, w)
    for _ in range(60):  # timed heads 1, 2, 3, 32 (and 48), head 16 runs the members eager
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    kf.stats()  # reads back the event pairs still pending: the verdict is taken there at the latest
    e = entry(spec)
    why = {k: e.get(k) for k in ("state", "stopped", "reason", "heads", "completed", "timed",
                                 "kernel_us", "eager_us", "eager_heads")}
    assert e["state"] == "refused" and e["stopped"] == "slower", why
    assert e["timed"] >= EARLY_SAMPLES and e["kernel_us"] > 2 * e["eager_us"] > 0, why
    heads = e["heads"]
    for _ in range(3):
        torch.testing.assert_close(rms(x, w), eager(rms, x, w), **TOL)
    assert entry(spec)["heads"] == heads
