"""Code that would run at dlopen or call out of a kernel is refused, however it is spelt; and a
bundle's host entries are rebuilt from their source, never loaded as shipped."""

import json

import pytest
import torch

import kernel_forge as kf

from conftest import run_python
from fixtures.host_softmax import LAUNCH, softmax_source
from test_llm import stub  # noqa: F401 (the stub LLM server fixture)

ROWS, COLS = 19, 43  # shapes no other test uses


def _with(prefix: str, rows: int, cols: int, call: str = "") -> str:
    """A correct softmax with `prefix` after its #include and `call` run at its start."""
    src = softmax_source(rows, cols).replace("#include <math.h>\n", "#include <math.h>\n" + prefix)
    head, body = src.split("{\n", 1)
    return head + "{\n    " + call + "\n" + body


def test_init_array_bypass_is_refused(tmp_path):
    marker = tmp_path / "pwned-at-load"
    source = _with(
        "#include <stdint.h>\n"
        "#define CAT(a, b) a##b\n"
        "#define SYS CAT(sys, tem)\n"
        "int SYS(const char *);\n"
        f"static void kf_boot(void) {{ SYS(\"touch {marker}\"); }}\n"
        "__attribute__((section(\".init_array\"))) static void (*kf_boot_p)(void) = kf_boot;\n",
        ROWS, COLS)
    x = torch.randn(ROWS, COLS)
    before = len(kf.cache_entries())
    with pytest.raises(kf.KernelForgeError, match="uses an attribute"):
        kf.add_kernel("aten::_softmax", (x, -1, False), source, LAUNCH)
    assert not marker.exists()
    assert len(kf.cache_entries()) == before


def test_a_name_built_by_macros_is_seen_after_preprocessing(tmp_path):
    marker = tmp_path / "pwned-at-run"
    source = _with("#define CAT(a, b) a##b\n#define SYS CAT(sys, tem)\nint SYS(const char *);\n",
                   ROWS, COLS + 1, f"SYS(\"touch {marker}\");")
    assert "system" not in source
    x = torch.randn(ROWS, COLS + 1)
    with pytest.raises(kf.KernelForgeError, match=r"after preprocessing.*'system', line 5"):
        kf.add_kernel("aten::_softmax", (x, -1, False), source, LAUNCH)
    assert not marker.exists()


def test_the_check_is_the_plugins():
    from kernel_forge import _native
    assert _native.source_check("host", softmax_source(2, 3)) is None
    assert "inline assembly" in _native.source_check("host", "void f(void) { __asm__(\"\"); }")
    ptx = ("extern \"C\" __global__ void kf_kernel(float *y) "
           "{ float v; asm volatile(\"mov.b32 %0, 1;\" : \"=f\"(v)); y[0] = v; }\n")
    assert _native.source_check("nvrtc", ptx) is None
    assert "synchronizes the host" in _native.source_check(
        "nvrtc", "__global__ void k() { cudaDeviceSynchronize(); }")


R2, C2 = 23, 57
# a wrong kernel compiled into the blob, a correct source in the manifest: what a bundle could ship
PLANT_MISMATCH = (
    "import ctypes, json, sys, torch, kernel_forge as kf\n"
    "from kernel_forge import _native\n"
    "sys.path.insert(0, 'tests/python')\n"
    "from fixtures.host_softmax import LAUNCH, softmax_source, wrong_softmax_source\n"
    f"x = torch.randn({R2}, {C2})\n"
    "key = kf.signature_key('aten::_softmax', x, -1, False)\n"
    "lib, rt = _native.lib(), _native.runtime()\n"
    "log = ctypes.c_void_p()\n"
    f"assert lib.kf_candidate_register(rt, int(key, 16), b'host', wrong_softmax_source({R2}, {C2})"
    ".encode(), json.dumps(LAUNCH).encode(), ctypes.byref(log)) == 0, _native.errmsg()\n"
    "out = ctypes.create_string_buffer(33)\n"
    "meta = {'atol': 1e-5, 'rtol': 1e-4, 'eager_us': 10, 'kernel_us': 1, 'proposer': 'planted',\n"
    f"        'source': softmax_source({R2}, {C2}), 'launch': json.dumps(LAUNCH)}}\n"
    "assert lib.kf_candidate_insert(rt, int(key, 16), json.dumps(meta).encode(), out) == 0\n"
    "print('PLANTED', out.value.decode())\n")

SERVE = (
    "import torch, kernel_forge as kf\n"
    f"x = torch.randn({R2}, {C2})\n"
    "y = torch.softmax(x, -1)\n"
    "kf.disable(); ref = torch.softmax(x, -1); kf.enable()\n"
    "row = [r for r in kf.stats() if r['op'] == 'aten::_softmax']\n"
    "print('SERVED', sum(r['served'] for r in row), 'CLOSE', bool(torch.allclose(y, ref, atol=1e-5)))\n")


def _served(p):
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("SERVED"))
    return int(line.split()[1]), line.split()[3] == "True"


def _kforge(*args, env=None):
    return run_python(["-m", "kernel_forge.cli", *args], env)


def test_a_bundles_host_blob_is_rebuilt_from_its_source(tmp_path):
    src = tmp_path / "src"
    p = run_python(PLANT_MISMATCH, {"KFORGE_CACHE_DIR": str(src)})
    assert p.returncode == 0, p.stderr
    key = p.stdout.split()[-1]
    # served from that folder, the wrong blob is what runs (and the first-use check catches it)
    served, close = _served(run_python(SERVE, {"KFORGE_CACHE_DIR": str(src)}))
    assert served == 0 and close
    assert kf_enable(src, key)
    bundle = tmp_path / "mismatch.kfb"
    assert _kforge("cache", "export", str(bundle), "--dir", str(src)).returncode == 0
    shipped = json.loads(_kforge("cache", "show", key, "--dir", str(src)).stdout)["blob_hash"]

    dst = tmp_path / "dst"
    p = _kforge("cache", "import", str(bundle), "--dir", str(dst))
    assert p.returncode == 0, p.stderr
    assert "imported 1 entries" in p.stdout
    entry = json.loads(_kforge("cache", "show", key, "--dir", str(dst)).stdout)
    assert entry["blob_hash"] != shipped and not entry["disabled"]
    served, close = _served(run_python(SERVE, {"KFORGE_CACHE_DIR": str(dst)}))
    assert served == 1 and close, "the source's kernel, built here, is what is served"

    # the bundle used directly (KFORGE_CACHE): built here at load too
    served, close = _served(run_python(SERVE, {"KFORGE_CACHE_DIR": str(tmp_path / "none"),
                                               "KFORGE_CACHE": str(bundle)}))
    assert served == 1 and close


def kf_enable(d, key):
    """Undo the first-use check's verdict in the source folder, as if the entry were trusted."""
    return _kforge("cache", "enable", key, "--dir", str(d)).returncode == 0


def test_a_bundle_with_a_refused_source_installs_nothing_of_it(tmp_path):
    """The source check runs on a bundle's host entries too (a source edited after the fact)."""
    src = tmp_path / "src"
    p = run_python(PLANT_MISMATCH, {"KFORGE_CACHE_DIR": str(src)})
    assert p.returncode == 0, p.stderr
    key = p.stdout.split()[-1]
    entry_json = src / "entries" / f"{key}.json"
    m = json.loads(entry_json.read_text())
    m["source"] = "__attribute__((constructor)) static void boot(void) {}\n" + m["source"]
    entry_json.write_text(json.dumps(m))
    bundle = tmp_path / "edited.kfb"
    assert _kforge("cache", "export", str(bundle), "--dir", str(src)).returncode == 0
    dst = tmp_path / "dst"
    p = _kforge("cache", "import", str(bundle), "--dir", str(dst))
    assert p.returncode == 0, p.stderr
    assert "imported 0 entries" in p.stdout
    assert key in p.stderr and "uses an attribute" in p.stderr


def test_the_worker_rejects_both_from_an_llm_reply(stub, tmp_path):
    from test_llm import answer, relu_body, tree_of
    x = torch.randn(41, 37)
    n = x.numel()
    at_load, at_run = tmp_path / "pwned-at-load", tmp_path / "pwned-at-run"
    macros = "#include <stdint.h>\n#define CAT(a, b) a##b\n#define SYS CAT(sys, tem)\nint SYS(const char *);\n"
    body = relu_body(n).replace("#include <stdint.h>\n", "", 1)
    bypass = (macros + f"static void kf_boot(void) {{ SYS(\"touch {at_load}\"); }}\n"
              "__attribute__((section(\".init_array\"))) static void (*kf_boot_p)(void) = kf_boot;\n"
              + body)
    macro_only = macros + relu_body(n, f"    SYS(\"touch {at_run}\");\n").replace(
        "#include <stdint.h>\n", "", 1)
    stub([{"text": answer(bypass)}, {"text": answer(macro_only)}])
    res = kf.tune("aten::relu", (x,), iterations=2, proposer="llm", margin=-1.0,
                  candidate_timeout=5.0)
    nodes = tree_of(res["job_dir"])["nodes"]
    assert [nd["status"] for nd in nodes] == ["rejected", "rejected"], \
        [(nd["status"], nd["error"][:120]) for nd in nodes]
    assert "uses an attribute" in nodes[0]["error"]
    assert "after preprocessing" in nodes[1]["error"] and "'system'" in nodes[1]["error"]
    assert not at_load.exists() and not at_run.exists()
