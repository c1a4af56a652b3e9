"""Issue 17 end to end on the host backend: a tiny transformers Llama (random weights, no_grad)
gets its chains recorded, `kforge warmup` (default options) tunes its RMSNorm and rotary chains, and a fresh
process that only imports kernel_forge serves them: outputs within tolerance of eager, and fewer
kernels launched per forward (the count is printed)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import ROOT
from fixtures.chain_warmup import serving

pytest.importorskip("transformers")
SCRIPT = os.path.join(ROOT, "tests", "python", "fixtures", "tiny_llama.py")


def env_for(cache, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    env.update(KFORGE_CACHE_DIR=str(cache), PYTHONPATH=ROOT, OMP_NUM_THREADS="1", **extra)
    return env


def plugin_run(cache, out, forwards=20, mode="no_grad", **env):
    code = (f"import sys; sys.argv = [{SCRIPT!r}, {str(out)!r}, '{forwards}', '{mode}']; "
            "import kernel_forge, runpy; runpy.run_path(sys.argv[0], run_name='__main__')")
    p = subprocess.run([sys.executable, "-c", code], env=env_for(cache, **env), capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(l for l in p.stdout.splitlines() if l.startswith("KF "))
    return json.loads(line[3:])


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    d = tmp_path_factory.mktemp("llama-chains")
    subprocess.run([sys.executable, SCRIPT, str(d / "eager.pt")], env=env_for(d / "none"),
                   check=True, timeout=600, cwd=ROOT)
    # --no-check: the chains' serving is tested here, not the model check's verdict on this box
    p = subprocess.run([sys.executable, "-m", "kernel_forge", "warmup", "--time-budget", "60",
                        "--no-check", "--json", str(d / "warm.json"), SCRIPT, str(d / "warm.pt")],
                       env=env_for(d / "cache"),
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return d, p.stdout


def test_chains_are_recorded(warm):
    d, _ = warm
    code = (f"import sys; sys.argv = [{SCRIPT!r}, {str(d / 'rec.pt')!r}, '4']; "
            "import kernel_forge as kf, runpy; kf.set_recording(True); "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    p = subprocess.run([sys.executable, "-c", code], env=env_for(d / "rec-cache"),
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    chains = json.loads(next(l for l in p.stdout.splitlines() if l.startswith("KF "))[3:])["chains"]
    ops = [[o.split("::")[1] for o in c["ops"]] for c in chains]
    rms = ["pow.Tensor_Scalar", "mean.dim", "add.Tensor", "rsqrt", "mul.Tensor", "mul.Tensor"]
    assert any(o[-6:] == rms for o in ops), ops  # RMSNorm (and residual add + RMSNorm)
    assert any(o[:2] == ["silu", "mul.Tensor"] for o in ops), ops  # SwiGLU
    # rotary, q * cos + cat(-x2, x1) * sin: neg and cat read slices of q (views of the head's
    # input, taken at the head), sin is a new view (unsqueeze) in every layer, predicted by its
    # storage; fusable whole
    rot = ["mul.Tensor", "neg", "cat", "mul.Tensor", "add.Tensor"]
    rotary = [c for c, o in zip(chains, ops) if o[:5] == rot]
    assert rotary, ops
    spec = next(c["spec"] for c in rotary if c["spec"] and len(c["spec"]["members"]) == 5)
    assert sorted(v[2] for v in spec["views"]) == [0, 128], spec["views"]  # x1, x2 (f32, 32 in)
    assert [m["inputs"] for m in spec["members"]][1:4] == [[["ext", 0]], [["member", 1, 0], ["ext", 1]],
                                                             [["member", 2, 0], ["ext", 2]]]


def test_warmup_tunes_the_rmsnorm_and_rotary_chains(warm):
    _, out = warm
    for ops in ("pow -> mean", "mul -> neg -> cat -> mul -> add"):
        rows = [l for l in out.splitlines() if l.startswith("chain") and ops in l]
        assert rows and any(l.rstrip().endswith("inserted") for l in rows), (ops, out[-3000:])


def test_the_members_the_chains_run_are_searched_after_the_first_pass(warm):
    # so that their own kernels serve where a chain's does not (a dropped head, the model check)
    d, _ = warm
    with open(d / "warm.json") as f:
        rows = json.load(f)["rows"]
    members = [r for r in rows if "its calls run in the kernel of chain: " in (r.get("detail") or "")]
    assert members, [(r["signature"], r["status"], r.get("detail")) for r in rows]
    assert all(r["iterations"] > 0 for r in members), members
    assert any(r["status"] == "inserted" for r in members), members


def test_a_fresh_process_serves_them(warm):
    d, _ = warm
    forwards = 20
    res = plugin_run(d / "cache", d / "plugin.pt", forwards)
    served = serving(res["entries"])
    assert served, res["entries"]
    eager, plugin = torch.load(d / "eager.pt"), torch.load(d / "plugin.pt")
    torch.testing.assert_close(plugin, eager, atol=1e-4, rtol=1e-4)
    # every completed chain handed out its members' outputs from one launch
    saved = sum(e["completed"] * (len(e["ops"].split(" -> ")) - 1) for e in served)
    print(f"\nchain kernels served {sum(e['completed'] for e in served)} chains in {forwards} "
          f"forwards: {saved / forwards:.1f} fewer kernel launches per forward")
    assert saved / forwards >= 4
    rotary = [e for e in served if e["ops"].startswith("mul.Tensor -> neg -> cat")]
    # one layer of two per forward: the first layer's sin is a new forward's storage
    assert rotary and rotary[0]["completed"] >= forwards // 2, served


def test_served_under_inference_mode_too(warm):
    # most inference scripts run under torch.inference_mode: activations are inference tensors
    # (no version counter), held while a chain is pending by watching this thread's writes
    d, _ = warm
    forwards = 20
    res = plugin_run(d / "cache", d / "plugin-inference.pt", forwards, mode="inference")
    served = serving(res["entries"])
    assert served, res["entries"]
    torch.testing.assert_close(torch.load(d / "plugin-inference.pt"), torch.load(d / "eager.pt"),
                               atol=1e-4, rtol=1e-4)
    saved = sum(e["completed"] * (len(e["ops"].split(" -> ")) - 1) for e in served)
    print(f"\ninference_mode: {saved / forwards:.1f} fewer kernel launches per forward")
    assert saved / forwards >= 4
    assert any(e["ops"].startswith("mul.Tensor -> neg -> cat") and e["completed"] >= forwards // 2
               for e in served), served


def test_deferred_mode_serves_swiglu_too(warm):
    # SwiGLU's mul reads up(x), a linear's output the head cannot have: served only in the
    # opt-in deferred mode (docs/chains.md), its kernel at the mul
    d, _ = warm
    p = subprocess.run([sys.executable, "-m", "kernel_forge", "warmup", "--time-budget", "60",
                        "--no-check", SCRIPT, str(d / "warm-deferred.pt")],
                       env=env_for(d / "cache-deferred", KFORGE_CHAIN_DEFERRED="1"),
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = [l for l in p.stdout.splitlines() if l.startswith("chain") and "silu -> mul" in l]
    assert rows and rows[0].rstrip().endswith("inserted"), p.stdout[-3000:]
    forwards = 20
    for mode in ("no_grad", "inference"):
        res = plugin_run(d / "cache-deferred", d / f"deferred-{mode}.pt", forwards, mode,
                         KFORGE_CHAIN_DEFERRED="1")
        swiglu = [e for e in serving(res["entries"]) if e["ops"] == "silu -> mul.Tensor"]
        assert swiglu and swiglu[0]["completed"] >= 2 * forwards - 2, res["entries"]
        torch.testing.assert_close(torch.load(d / f"deferred-{mode}.pt"), torch.load(d / "eager.pt"),
                                   atol=1e-4, rtol=1e-4)
    # without the opt-in the same cache serves the rest, not SwiGLU
    res = plugin_run(d / "cache-deferred", d / "deferred-off.pt", forwards)
    assert not [e for e in serving(res["entries"]) if e["ops"] == "silu -> mul.Tensor"], res["entries"]
