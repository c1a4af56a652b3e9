"""Online tuning (issue 21): a deeper search's winner that replaces an entry this process
already serves (the same cache key, another blob) is served in this process too."""

import json
import os

import pytest

from conftest import ROOT, run_python
from fixtures.host_softmax import slow_softmax_source


STAGE = r"""
import json, sys, torch, kernel_forge as kf
sys.path.insert(0, %(fixtures)r)
from host_softmax import LAUNCH, softmax_source
x = torch.randn(%(rows)d, %(cols)d)
src = %(src)r
r = kf.add_kernel("aten::_softmax", (x, -1, False), src or softmax_source(%(rows)d, %(cols)d),
                  LAUNCH, allow_slower=True)
print("KEY " + r["cache_key"])
"""

MODEL = r"""
import json, statistics, sys, time, torch, kernel_forge as kf
from kernel_forge import _tuner
x = torch.randn(%(rows)d, %(cols)d)
def served(n=30):
    s0 = sum(r["served"] for r in kf.stats() if r["op"] == "aten::_softmax")
    ts = []
    for _ in range(n):
        t = time.perf_counter(); torch.softmax(x, -1); ts.append(time.perf_counter() - t)
    s1 = sum(r["served"] for r in kf.stats() if r["op"] == "aten::_softmax")
    return statistics.median(ts) * 1e6, s1 - s0
out = {}
_tuner.land(%(ramp)r, kf.cache_dir(), %(key)r)  # what the online tuner does for a winner
kf.reload_cache()
out["ramp_us"], out["ramp_served"] = served()
_tuner.land(%(deep)r, kf.cache_dir(), %(key)r)  # the deep pass's: the same cache key
kf.reload_cache()
out["deep_us"], out["deep_served"] = served()
out["stopped"] = [r["stopped"] for r in kf.stats() if r["op"] == "aten::_softmax"]
print("RESULT " + json.dumps(out))
"""


FIXTURES = os.path.join(ROOT, "tests", "python", "fixtures")


def stage(tmp_path, script, variants, **fields):
    """Each variant's kernel added in its own cache folder (tmp_path / name), from `script`
    formatted with the variant's fields: their one cache key (one signature, one environment)."""
    keys = set()
    for name, extra in variants.items():
        code = script % dict(fields, fixtures=FIXTURES, **extra)
        p = run_python(code, {"KFORGE_CACHE_DIR": str(tmp_path / name)}, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        keys.add(p.stdout.split("KEY ")[-1].strip())
    assert len(keys) == 1, keys
    return keys.pop()


def test_a_deeper_winner_replacing_a_served_entry_is_served_in_this_process(tmp_path):
    rows, cols = 64, 256
    key = stage(tmp_path, STAGE, {"ramp": {"src": slow_softmax_source(rows, cols)}, "deep": {"src": ""}},
                rows=rows, cols=cols)
    code = MODEL % {"rows": rows, "cols": cols, "ramp": str(tmp_path / "ramp"),
                    "deep": str(tmp_path / "deep"), "key": key}
    # no eager samples and no timed calls after the first three: the speed guard cannot stop
    # the slow ramp kernel, so what is timed here is which kernel is served
    p = run_python(code, {"KFORGE_CACHE_DIR": str(tmp_path / "model"), "KFORGE_LOG": "info",
                          "KFORGE_EAGER_SAMPLE_EVERY": "0", "KFORGE_SAMPLE_EVERY": "1000000",
                          "OMP_NUM_THREADS": "1"}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.split("RESULT ")[-1])
    print(f"\nramp kernel {out['ramp_us']:.0f} us, deep kernel {out['deep_us']:.0f} us per call")
    assert out["ramp_served"] == 30 and out["deep_served"] == 30, out
    assert out["stopped"] == [""], out
    assert out["deep_us"] * 4 < out["ramp_us"], out  # the deep kernel is what is served now
    assert "replacing the entry served before" in p.stderr, p.stderr[-3000:]


CUDA_STAGE = r"""
import sys, torch, kernel_forge as kf
sys.path.insert(0, %(fixtures)r)
from oob_kernels import cuda_launch, cuda_source
x = torch.randn(%(rows)d, %(cols)d, device="cuda")
src = cuda_source("correct", %(rows)d, %(cols)d) + %(tail)r
r = kf.add_kernel("aten::_softmax", (x, -1, False), src, cuda_launch(%(rows)d), allow_slower=True)
print("KEY " + r["cache_key"])
"""

CUDA_MODEL = r"""
import json, torch, kernel_forge as kf
from kernel_forge import _tuner
_tuner.land(%(v1)r, kf.cache_dir(), %(key)r)
kf.reload_cache()  # listed before any CUDA call: kept pending, the driver untouched
_tuner.land(%(v2)r, kf.cache_dir(), %(key)r)  # replaced (a deeper search's winner)
kf.reload_cache()
x = torch.randn(%(rows)d, %(cols)d, device="cuda")
for _ in range(5):
    y = torch.softmax(x, -1)
torch.cuda.synchronize()
row = next(r for r in kf.stats() if r["op"] == "aten::_softmax")
ok = bool(torch.allclose(y.sum(-1), torch.ones(%(rows)d, device="cuda")))
print("RESULT " + json.dumps({"served": row["served"], "ok": ok}))
"""


@pytest.mark.gpu
def test_a_pending_cuda_entry_replaced_before_the_first_cuda_call_serves_the_new_blob(tmp_path):
    # on the H200: PYTHONPATH=$PWD python3 -m pytest -q tests/python/test_online_replace.py -m gpu
    rows, cols = 300, 96
    key = stage(tmp_path, CUDA_STAGE, {"v1": {"tail": ""}, "v2": {"tail": "\n// v2: another blob\n"}},
                rows=rows, cols=cols)
    code = CUDA_MODEL % {"v1": str(tmp_path / "v1"), "v2": str(tmp_path / "v2"), "key": key,
                         "rows": rows, "cols": cols}
    p = run_python(code, {"KFORGE_CACHE_DIR": str(tmp_path / "model"), "KFORGE_LOG": "info",
                          "KFORGE_EAGER_SAMPLE_EVERY": "0"}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.split("RESULT ")[-1])
    # before the fix the pending manifest (v1's) was paired with v2's blob: "skipped", eager
    assert "skipped" not in p.stderr, p.stderr[-3000:]
    assert out["served"] > 0 and out["ok"], out
