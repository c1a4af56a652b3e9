"""The kernel cache on CPU with the host C backend: add_kernel verifies and inserts, the entry
is served in this and other processes, ships in a bundle, and everything bad is refused."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import kernel_forge as kf

from conftest import ROOT, run_python
from fixtures.host_softmax import (LAUNCH, crashing_source, input_writing_source, softmax_source,
                                   untouched_output_source, wrong_softmax_source)

ROWS, COLS = 37, 101  # a shape no other test uses: served kernels must not leak into them


def softmax_row(x):
    return next((r for r in kf.stats() if r["op"] == "aten::_softmax"
                 and f"f32[{x.shape[0]},{x.shape[1]}]" in r["signature"]), None)


@pytest.fixture(scope="module")
def added():
    x = torch.randn(ROWS, COLS)
    # a naive C softmax, slower than torch's: the cache is under test here, not the speed
    res = kf.add_kernel("aten::_softmax", (x, -1, False), softmax_source(ROWS, COLS), LAUNCH,
                        allow_slower=True)
    return res


def kforge(*args, env=None):
    return run_python(["-m", "kernel_forge.cli", *args], env)


SERVE_CHECK = (
    "import torch, kernel_forge as kf\n"
    "x = torch.randn(%d, %d)\n"
    "y = torch.softmax(x, -1)\n"
    "kf.disable(); ref = torch.softmax(x, -1); kf.enable()\n"
    "row = [r for r in kf.stats() if r['op'] == 'aten::_softmax']\n"
    "print('SERVED', sum(r['served'] for r in row), 'CLOSE', bool(torch.allclose(y, ref, atol=1e-5)),"
    " 'EQUAL', bool(torch.equal(y, ref)))\n" % (ROWS, COLS))


def served_line(p):
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("SERVED"))
    parts = line.split()
    return int(parts[1]), parts[3] == "True", parts[5] == "True"


def test_add_kernel_verifies_inserts_and_serves(added):
    assert added["status"] == "ok" and len(added["cache_key"]) == 32
    assert added["inputs_checked"] == 4 and added["check"]["status"] == "verified"
    assert added["max_abs_err"] <= added["atol"] + added["rtol"]
    assert added["eager_us"] > 0 and added["kernel_us"] > 0
    entry = next(e for e in kf.cache_entries() if e["key"] == added["cache_key"])
    assert entry["op"] == "aten::_softmax" and entry["backend"] == "host"
    assert entry["served_here"] and not entry["disabled"]
    x = torch.randn(ROWS, COLS)
    before = softmax_row(x)
    y = torch.softmax(x, -1)
    after = softmax_row(x)
    assert after["served"] == (before["served"] if before else 0) + 1
    kf.disable()
    ref = torch.softmax(x, -1)
    kf.enable()
    assert torch.allclose(y, ref, atol=1e-5, rtol=1e-4)
    assert y.stride() == ref.stride() and y.dtype == ref.dtype
    # another shape is still eager
    z = torch.randn(ROWS, COLS + 1)
    torch.softmax(z, -1)
    assert softmax_row(z)["served"] == 0


def test_served_by_a_second_process_from_disk(added):
    served, close, _ = served_line(run_python(SERVE_CHECK))
    assert served == 1 and close


def test_bundle_export_import_into_an_empty_cache(added, tmp_path):
    bundle = tmp_path / "softmax.kfb"
    p = kforge("cache", "export", str(bundle), "--op", "aten::_softmax")
    assert p.returncode == 0, p.stderr
    assert "exported 1 entries" in p.stdout
    empty = tmp_path / "fresh-cache"
    p = kforge("cache", "import", str(bundle), "--dir", str(empty))
    assert p.returncode == 0, p.stderr
    served, close, _ = served_line(run_python(SERVE_CHECK, {"KFORGE_CACHE_DIR": str(empty)}))
    assert served == 1 and close
    # a bundle can also be used read-only, with no cache folder at all
    served, close, _ = served_line(run_python(SERVE_CHECK, {
        "KFORGE_CACHE_DIR": str(tmp_path / "none"), "KFORGE_CACHE": str(bundle)}))
    assert served == 1 and close
    assert not (tmp_path / "none").exists()


def test_damaged_bundles_install_nothing(added, tmp_path):
    bundle = tmp_path / "b.kfb"
    assert kforge("cache", "export", str(bundle)).returncode == 0
    data = bundle.read_bytes()
    flipped = tmp_path / "flipped.kfb"
    flipped.write_bytes(data[:-10] + bytes([data[-10] ^ 0x40]) + data[-9:])
    truncated = tmp_path / "truncated.kfb"
    truncated.write_bytes(data[: len(data) // 2])
    for bad in (flipped, truncated):
        target = tmp_path / ("dir-" + bad.stem)
        p = kforge("cache", "import", str(bad), "--dir", str(target))
        assert p.returncode != 0
        assert "kforge cache:" in p.stderr
        p = kforge("cache", "ls", "--json", "--dir", str(target))
        assert json.loads(p.stdout) == []


@pytest.mark.parametrize("source, reason", [
    (wrong_softmax_source(ROWS, COLS + 7), "outside atol"),
    (untouched_output_source(ROWS, COLS + 7), "untouched: .* still hold the 0xff poison"),
    (input_writing_source(ROWS, COLS + 7), "input_written: .*input 0: the kernel changed it"),
    ("#define ROWS 1\nvoid kf_kernel(const float *x, float *y) { syntax error }\n", "compile failed"),
    ("void kf_kernel(const float *x, float *y) { at::Tensor t; }\n", "calls back into ATen"),
])
def test_bad_kernels_are_refused(source, reason):
    x = torch.randn(ROWS, COLS + 7)
    before = len(kf.cache_entries())
    with pytest.raises(kf.KernelForgeError, match=reason):
        kf.add_kernel("aten::_softmax", (x, -1, False), source, LAUNCH)
    assert len(kf.cache_entries()) == before


def test_crashing_kernel_costs_only_the_child():
    x = torch.randn(ROWS, COLS + 9)
    with pytest.raises(kf.KernelForgeError, match="killed by signal SIGSEGV"):
        kf.add_kernel("aten::_softmax", (x, -1, False), crashing_source(ROWS, COLS + 9), LAUNCH)
    assert torch.allclose(torch.softmax(x, -1).sum(-1), torch.ones(ROWS))  # we are fine


def test_corrupted_blob_is_skipped_with_a_warning(added, tmp_path):
    copy = tmp_path / "cache"
    shutil.copytree(kf.cache_dir(), copy)
    blob = copy / "entries" / f"{added['cache_key']}.blob"
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))
    p = run_python(SERVE_CHECK, {"KFORGE_CACHE_DIR": str(copy)})
    served, _, equal = served_line(p)
    assert served == 0 and equal
    assert added["cache_key"] in p.stderr  # one warning naming the entry
    p = kforge("cache", "verify", "--dir", str(copy))
    assert p.returncode == 1 and added["cache_key"] in p.stdout


PLANT = (
    "import ctypes, json, sys, torch, kernel_forge as kf\n"
    "from kernel_forge import _native\n"
    "sys.path.insert(0, 'tests/python')\n"
    "from fixtures.host_softmax import LAUNCH, wrong_softmax_source\n"
    "x = torch.randn(%d, %d)\n"
    "key = kf.signature_key('aten::_softmax', x, -1, False)\n"
    "lib, rt = _native.lib(), _native.runtime()\n"
    "log = ctypes.c_void_p()\n"
    "assert lib.kf_candidate_register(rt, int(key, 16), b'host', wrong_softmax_source(%d, %d).encode(),"
    " json.dumps(LAUNCH).encode(), ctypes.byref(log)) == 0, _native.errmsg()\n"
    "out = ctypes.create_string_buffer(33)\n"
    "meta = {'atol': 1e-5, 'rtol': 1e-4, 'eager_us': 10, 'kernel_us': 1, 'proposer': 'planted',\n"
    "        'source': wrong_softmax_source(%d, %d), 'launch': json.dumps(LAUNCH)}\n"
    "assert lib.kf_candidate_insert(rt, int(key, 16), json.dumps(meta).encode(), out) == 0, _native.errmsg()\n"
    "print('PLANTED', out.value.decode())\n" % (ROWS, COLS, ROWS, COLS, ROWS, COLS))


def test_planted_wrong_entry_is_caught_on_first_use(tmp_path):
    d = str(tmp_path / "planted")
    p = run_python(PLANT, {"KFORGE_CACHE_DIR": d})
    assert p.returncode == 0, p.stderr
    key = p.stdout.split()[-1]
    # first use in a new process: the check runs eager too, disagrees, returns eager's result
    p = run_python(SERVE_CHECK, {"KFORGE_CACHE_DIR": d})
    served, _, equal = served_line(p)
    assert equal, "the model must get eager's result"
    assert served == 0, "a call that returned eager's result is not counted as served"
    assert "disagrees with eager" in p.stderr
    ls = json.loads(kforge("cache", "ls", "--json", "--dir", d).stdout)
    (entry,) = [e for e in ls if e["key"] == key]
    assert entry["disabled"] and "exceeds atol" in entry["disabled_reason"]
    # and no later process serves it
    served, _, equal = served_line(run_python(SERVE_CHECK, {"KFORGE_CACHE_DIR": d}))
    assert served == 0 and equal


CONCURRENT = (
    "import sys, torch, kernel_forge as kf\n"
    "sys.path.insert(0, 'tests/python')\n"
    "from fixtures.host_softmax import LAUNCH, softmax_source\n"
    "rows = int(sys.argv[1])\n"
    "r = kf.add_kernel('aten::_softmax', (torch.randn(rows, 33), -1, False), softmax_source(rows, 33), LAUNCH, allow_slower=True)\n"
    "print('KEY', r['cache_key'])\n")


def test_two_processes_inserting_at_once(tmp_path):
    d = str(tmp_path / "shared")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_") or k == "KFORGE_INTERCEPT"}
    env["KFORGE_CACHE_DIR"] = d
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(rows)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rows in (5, 6, 7)]
    keys = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        keys.append(out.split()[-1])
    ls = json.loads(kforge("cache", "ls", "--json", "--dir", d).stdout)
    assert sorted(e["key"] for e in ls) == sorted(keys)
    p = kforge("cache", "verify", "--dir", d)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 problems" in p.stdout
    leftovers = [f for f in os.listdir(os.path.join(d, "entries")) if not f.endswith((".json", ".blob"))]
    assert not leftovers


def test_cli_ls_show_rm_clear(added, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(kf.cache_dir(), d)
    p = kforge("cache", "ls", "--dir", str(d))
    assert p.returncode == 0 and added["cache_key"] in p.stdout and "_softmax" in p.stdout
    p = kforge("cache", "show", added["cache_key"], "--dir", str(d))
    assert p.returncode == 0 and "expf" in json.loads(p.stdout)["source"]
    assert kforge("cache", "show", "0" * 32, "--dir", str(d)).returncode != 0
    assert kforge("cache", "disable", added["cache_key"], "--dir", str(d)).returncode == 0
    served, _, _ = served_line(run_python(SERVE_CHECK, {"KFORGE_CACHE_DIR": str(d)}))
    assert served == 0
    assert kforge("cache", "enable", added["cache_key"], "--dir", str(d)).returncode == 0
    p = kforge("cache", "rm", added["cache_key"], "--dir", str(d))
    assert p.returncode == 0
    assert added["cache_key"] not in kforge("cache", "ls", "--dir", str(d)).stdout
    assert kforge("cache", "rm", "../../etc", "--dir", str(d)).returncode != 0
    assert kforge("cache", "clear", "--dir", str(d)).returncode == 0


WATCH = (
    "import time, torch, kernel_forge as kf\n"
    "x = torch.randn(11, 29)\n"
    "print('READY', flush=True)\n"
    "deadline = time.time() + 120\n"
    "while time.time() < deadline:\n"
    "    torch.softmax(x, -1)\n"
    "    if any(r['served'] for r in kf.stats() if r['op'] == 'aten::_softmax'):\n"
    "        print('SERVED without a restart', flush=True)\n"
    "        break\n"
    "    time.sleep(0.02)\n")


def test_a_running_process_picks_up_new_entries(tmp_path):
    d = str(tmp_path / "live")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_") or k == "KFORGE_INTERCEPT"}
    env.update(KFORGE_CACHE_DIR=d, KFORGE_RELOAD_MS="50")
    watcher = subprocess.Popen([sys.executable, "-c", WATCH], env=env, cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert watcher.stdout.readline().strip() == "READY"
    insert = (f"import sys, torch, kernel_forge as kf\nsys.path.insert(0, 'tests/python')\n"
              f"from fixtures.host_softmax import LAUNCH, softmax_source\n"
              f"kf.add_kernel('aten::_softmax', (torch.randn(11, 29), -1, False), "
              f"softmax_source(11, 29), LAUNCH, allow_slower=True)\n")
    p = run_python(insert, {"KFORGE_CACHE_DIR": d})
    assert p.returncode == 0, p.stderr
    out, err = watcher.communicate(timeout=180)
    assert "SERVED without a restart" in out, err
