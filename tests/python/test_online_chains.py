"""Online tuning tunes chains too (KFORGE_TUNE=1, KFORGE_TUNE_CHAINS on by default): a bf16
RMSNorm block in a loop gets its whole chain recorded (from its cast to float32 to the weight's
mul), a chain job
written from the members' real calls, a kernel landed (without the op confirmation: the chain
speed guard judges it where it is served) and served in the same process, its output within
bf16 rounding of eager's."""

import json

from conftest import run_python
from fixtures.chain_warmup import HF_RMSNORM

MODEL = "import json, time, torch\nimport kernel_forge as kf\n" + HF_RMSNORM + r'''
torch.manual_seed(0)
norm = RMSNorm(256).to(torch.bfloat16)
x = torch.randn(8, 32, 256).to(torch.bfloat16)  # small: on the host a fused kernel wins by launches
ops = ("_to_copy -> pow.Tensor_Scalar -> mean.dim -> add.Tensor -> rsqrt -> mul.Tensor"
       " -> _to_copy -> mul.Tensor")
end, served = time.time() + 150, None
with torch.inference_mode():
    while time.time() < end:
        for _ in range(10):
            y = norm(x)
        time.sleep(0.005)
        e = [c for c in kf.chain_entries() if c["ops"] == ops and c["state"] == "served"]
        if e and e[0]["completed"] >= 5:
            served = e[0]
            break
    kf.disable()
    want = norm(x)
    kf.enable()
err = ((y.double() - want.double()).abs().max() / want.double().abs().max()).item()
print("RESULT " + json.dumps({"served": served, "err": err, "status": kf.tuner_status()}))
'''


def env(tmp_path):
    return {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "KFORGE_TUNE": "1",
            "KFORGE_TUNE_INTERVAL": "0.5", "KFORGE_RELOAD_MS": "100",
            "KFORGE_TUNE_QUIET_WAIT": "0.2", "KFORGE_LOG": "info", "OMP_NUM_THREADS": "1"}


def test_online_tuning_lands_and_serves_a_chain(tmp_path):
    p = run_python(MODEL, env(tmp_path), timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.split("RESULT ")[-1])
    chains = [r for r in res["status"]["landed"] if r.get("chain")]
    assert chains and chains[0]["signature"] == \
        "chain: _to_copy -> pow -> mean -> add -> rsqrt -> mul -> _to_copy -> mul", \
        (res["status"], p.stderr[-3000:])
    assert res["served"] is not None, (res, p.stderr[-3000:])
    assert res["err"] < 2e-2, res
    print(f"\nchain landed {chains[0]['after_hot_s']:.1f} s after it was hot "
          f"({chains[0]['speedup']:.2f}x in the search, {chains[0]['pass']} pass)")


NESTED = "import json, time, torch\nimport kernel_forge as kf\n" + HF_RMSNORM + r'''
torch.manual_seed(0)
norm1, norm2 = RMSNorm(256).to(torch.bfloat16), RMSNorm(256).to(torch.bfloat16)
x = torch.randn(2, 16, 256).to(torch.bfloat16)  # smaller still: the first chain must win here
r, x2 = torch.randn(2, 16, 256).to(torch.bfloat16), torch.randn(2, 16, 256).to(torch.bfloat16)
lin = torch.nn.Linear(256, 256, bias=False).to(torch.bfloat16)  # ends the first chain
end = time.time() + 200
with torch.inference_mode():
    while time.time() < end:
        for _ in range(10):
            # RMSNorm, a matmul, then a residual add and RMSNorm: the RMSNorm chain is also the
            # end of the add -> RMSNorm chain, whose calls rank for the longer one only; one
            # more RMSNorm on its own makes it rank first, twice per forward against once
            y = norm2(lin(norm1(x)) + r)
            norm1(x2)
        time.sleep(0.005)
        if len([e for e in kf.tuner_status()["landed"] if e.get("chain")]) >= 2:
            break
    kf.disable()
    want = norm2(lin(norm1(x)) + r)
    kf.enable()
    y = norm2(lin(norm1(x)) + r)
err = ((y.double() - want.double()).abs().max() / want.double().abs().max()).item()
entries = [{k: c.get(k) for k in ("ops", "state", "reason", "completed")} for c in kf.chain_entries()]
print("RESULT " + json.dumps({"entries": entries, "err": err, "status": kf.tuner_status()}))
'''


def test_a_chain_that_holds_a_landed_chain_lands_too(tmp_path):
    """add -> RMSNorm holds the RMSNorm chain: once that one's kernel serves its members, the
    longer chain's job still gets their real calls (captured as they are served) and lands.
    With KFORGE_EAGER_SAMPLE_EVERY=0 the speed guard never runs those members eager, so only
    captures of served calls can feed that job; at this size the first chain wins on the host
    and stays served."""
    p = run_python(NESTED, dict(env(tmp_path), KFORGE_EAGER_SAMPLE_EVERY="0"), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.split("RESULT ")[-1])
    sigs = [r["signature"] for r in res["status"]["landed"] if r.get("chain")]
    rms = "chain: _to_copy -> pow -> mean -> add -> rsqrt -> mul -> _to_copy -> mul"
    assert sigs == [rms, "chain: add -> " + rms[len("chain: "):]], \
        (sigs, res["status"]["refused"], p.stderr[-3000:])
    assert "not called in the capture run" not in p.stderr, p.stderr[-3000:]
    assert res["err"] < 2e-2, res
    print(f"\nchains landed in order: {sigs}; entries: {res['entries']}")
