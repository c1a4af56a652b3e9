"""A chain entry and the cache link (plugin/cachelink.c): one this process inserted into a cache
folder it had never opened is attached once (a reload does not attach it again), and a later
process with KFORGE_INTERCEPT=cached intercepts the chain's member ops for it."""

import json

from conftest import run_python
from test_chain_serving import LAUNCH, TOL, kernel_source

INSERT = """
import json, torch, kernel_forge as kf
def rms(x, w):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w
x, w = torch.randn(23, 64), torch.randn(64)
kf.set_recording(True)
for _ in range(4):
    rms(x, w)
kf.set_recording(False)
(ch,) = [c for c in kf.chains() if c["ops"][0] == "aten::pow.Tensor_Scalar"]
key = kf.add_chain_kernel(ch["spec"], {src!r}, {launch!r}, insert=True, **{tol!r})
kf.reload_cache()
print(json.dumps({{"key": key, "ops": sorted({{m["op"] for m in ch["spec"]["members"]}}),
                  "attached": [e["cache_key"] for e in kf.chain_entries()],
                  "served_here": [e["key"] for e in kf.cache_entries() if e["served_here"]]}}))
"""


def test_an_inserted_chain_is_attached_once_and_wants_its_member_ops(tmp_path):
    cache = str(tmp_path / "cache")  # no entries/ yet: the plugin has no cache handle at insert
    code = INSERT.format(src=kernel_source(23, 64), launch=json.dumps(LAUNCH), tol=TOL)
    p = run_python(code, {"KFORGE_CACHE_DIR": cache})
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["key"] and r["attached"] == [r["key"]], r  # not attached again by the reload
    assert r["served_here"] == [r["key"]], r  # cache_entries() says so too
    p = run_python("import json, kernel_forge as kf; print(json.dumps(kf.intercepted_ops()))",
                   {"KFORGE_CACHE_DIR": cache, "KFORGE_INTERCEPT": "cached"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert sorted(json.loads(p.stdout.strip().splitlines()[-1])) == r["ops"]
