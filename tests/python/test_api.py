"""The Python API, the environment switches, logging and the CLI."""

import json
import os
import sys

import pytest
import torch

import kernel_forge as kf

from conftest import ROOT, run_python


def test_load_is_idempotent_and_lists_ops():
    kf.load()
    kf.load()
    ops = kf.intercepted_ops()
    for op in ["aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm",
               "aten::native_group_norm", "aten::native_batch_norm", "aten::gelu", "aten::silu",
               "aten::relu", "aten::add.Tensor", "aten::mul.Tensor", "aten::copy_",
               "aten::clamp_min_", "aten::add_.Tensor", "aten::mul_.Tensor",
               "aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::cat",
               "aten::max_pool2d_with_indices"]:
        assert op in ops
    assert os.path.exists(kf.library_path())


def test_composite_implicit_ops_are_never_overridden():
    info = {o["op"]: o for o in kf.ops_info()["ops"]}
    rms = info["aten::_fused_rms_norm"]
    if torch._C._dispatch_has_kernel_for_dispatch_key("aten::_fused_rms_norm", "CPU"):
        pytest.skip("this torch has a CPU kernel for _fused_rms_norm")
    assert "CPU" not in rms["keys"].split(",")
    assert "CompositeImplicitAutograd" in rms["skipped"]
    # and autograd through F.rms_norm still works
    x = torch.randn(4, 8, requires_grad=True)
    torch.nn.functional.rms_norm(x, (8,)).sum().backward()
    assert x.grad is not None


def test_enable_disable_is_a_switch():
    x = torch.randn(3, 5)
    kf.reset_stats()
    kf.disable()
    assert not kf.enabled()
    torch.softmax(x, -1)
    assert not [r for r in kf.stats() if r["op"] == "aten::_softmax"]
    kf.enable()
    assert kf.enabled()
    torch.softmax(x, -1)
    rows = [r for r in kf.stats() if r["op"] == "aten::_softmax"]
    assert len(rows) == 1 and rows[0]["calls"] == 1


def test_stats_rows_have_the_documented_keys():
    kf.reset_stats()
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    for _ in range(5):
        torch.softmax(x, -1)
    (row,) = [r for r in kf.stats() if r["op"] == "aten::_softmax"]
    for key in ["op", "device", "signature", "key", "calls", "served", "fallback", "time_ms",
                "share", "intercepted", "eager_us", "served_us", "time_source"]:
        assert key in row
    assert row["signature"] == "_softmax(bf16[8,16], dim=-1, half_to_float=False)"
    assert row["device"] == "cpu" and row["calls"] == 5 and row["fallback"] == 5
    assert row["served"] == 0 and row["intercepted"] is True
    assert len(row["key"]) == 16 and int(row["key"], 16) > 0
    assert row["time_ms"] > 0 and 0 < row["share"] <= 1
    assert sum(r["share"] for r in kf.stats()) == pytest.approx(1.0)


def test_signatures_are_exact():
    kf.reset_stats()
    a = torch.randn(6, 4)
    torch.relu(a)
    torch.relu(a.t())                     # other strides
    torch.relu(torch.randn(6, 5))         # other size
    torch.relu(a.double())                # other dtype
    torch.relu(torch.randn(25)[1:])       # misaligned storage offset
    sigs = {r["signature"] for r in kf.stats() if r["op"] == "aten::relu"}
    assert sigs == {"relu(f32[6,4])", "relu(f32[4,6] s=(1,4))", "relu(f32[6,5])",
                    "relu(f64[6,4])", "relu(f32[24] align=4)"}


def test_plain_load_library_works():
    code = ("import torch, json\n"
            "torch.ops.load_library(__import__('glob').glob('kernel_forge/_kforge*.so')[0])\n"
            "x = torch.randn(4, 4); y = torch.softmax(x, -1)\n"
            "print(bool(torch.allclose(y.sum(-1), torch.ones(4))))\n"
            "import kernel_forge as kf\n"
            "print(json.dumps([r['calls'] for r in kf.stats() if r['op'] == 'aten::_softmax']))\n")
    p = run_python(code)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    assert lines[0] == "True"
    assert json.loads(lines[1]) == [1]  # the call made before `import kernel_forge` was counted


def test_kforge_disable_registers_nothing():
    p = run_python("import kernel_forge as kf, torch; torch.relu(torch.randn(3));"
                   "print(kf.intercepted_ops(), kf.enabled(), kf.stats())",
                   {"KFORGE_DISABLE": "1"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[] False []"


def test_kforge_ops_replaces_the_list_and_reports_bad_names():
    code = ("import logging\n"
            "logging.basicConfig(level=logging.WARNING, format='LOG %(name)s %(message)s')\n"
            "import kernel_forge as kf\n"
            "print('OPS', kf.intercepted_ops())\n")
    p = run_python(code, {"KFORGE_OPS": "relu, aten::add.Tensor,notanop,bad op!"})
    assert p.returncode == 0, p.stderr
    assert "OPS ['aten::relu', 'aten::add.Tensor']" in p.stdout
    # load-time messages reach Python's logging under the kernel_forge logger
    assert "LOG kernel_forge intercept list: no operator named aten::notanop" in p.stderr
    assert "LOG kernel_forge KFORGE_OPS: ignoring entries 'bad op!' (malformed)" in p.stderr


def test_only_the_override_warning_is_silenced():
    code = ("import warnings; warnings.simplefilter('always')\n"
            "import torch, kernel_forge\n"
            "torch.ops.aten.relu(torch.randn(2))\n")
    p = run_python(code)
    assert p.returncode == 0, p.stderr
    assert "Overriding a previously registered kernel" not in p.stderr
    # other torch warnings still come through while the plugin is loaded
    p = run_python("import torch, kernel_forge\n"
                   "torch.nn.functional.softmax(torch.randn(2, 3))\n")
    assert "Implicit dimension choice for softmax" in p.stderr


def test_log_level_from_environment():
    p = run_python("import kernel_forge", {"KFORGE_LOG": "debug", "KFORGE_OPS": "relu,_fused_rms_norm"})
    assert p.returncode == 0, p.stderr
    assert "aten::_fused_rms_norm on CPU: not intercepted (CompositeImplicitAutograd" in p.stderr


def test_recording_observes_ops_outside_the_list():
    kf.reset_stats()
    kf.set_recording(True)
    try:
        a, b = torch.randn(32, 32), torch.randn(32, 32)
        for _ in range(3):
            torch.relu(torch.atan(a @ b))
    finally:
        kf.set_recording(False)
    rows = {r["op"]: r for r in kf.stats()}
    assert rows["aten::atan"]["intercepted"] is False and rows["aten::atan"]["calls"] == 3
    assert rows["aten::mm"]["intercepted"] is False and rows["aten::mm"]["calls"] == 3
    assert rows["aten::relu"]["intercepted"] is True and rows["aten::relu"]["calls"] == 3
    # intercepted ops are not counted twice by the observer
    assert sum(1 for r in kf.stats() if r["op"] == "aten::relu") == 1
    # recording off: nothing new is observed
    torch.atan(a)
    assert {r["op"]: r for r in kf.stats()}["aten::atan"]["calls"] == 3


def test_kforge_run_prints_hot_signatures(tmp_path):
    script = tmp_path / "model.py"
    script.write_text("import sys, torch\n"
                      "x = torch.randn(64, 256)\n"
                      "for _ in range(int(sys.argv[1])):\n"
                      "    y = torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (256,)))\n"
                      "    z = torch.atan(y)\n"
                      "print('done')\n")
    out = tmp_path / "stats.json"
    p = run_python(["-m", "kernel_forge.cli", "run", "--json", str(out), str(script), "7"])
    assert p.returncode == 0, p.stderr
    assert "done" in p.stdout
    assert "gelu(f32[64,256], approximate='none')" in p.stdout
    assert "*aten::atan" in p.stdout  # observed, not intercepted: marked
    rows = json.loads(out.read_text())
    gelu = next(r for r in rows if r["op"] == "aten::gelu")
    assert gelu["calls"] == 7


def test_kforge_run_module_and_exit_code():
    p = run_python(["-m", "kernel_forge.cli", "run", "--top", "500", "-m", "kernel_forge.examples.tiny_model",
                    "--steps", "1", "--batch", "2", "--seq", "16"])
    assert p.returncode == 0, p.stderr
    assert "tiny model: 1 steps" in p.stdout
    assert "_softmax(f32[2,4,16,16], dim=-1, half_to_float=False)" in p.stdout


def test_kforge_run_missing_script():
    p = run_python(["-m", "kernel_forge.cli", "run", "/nonexistent/x.py"])
    assert p.returncode == 2 and "no such script" in p.stderr


def test_kforge_doctor():
    p = run_python(["-m", "kernel_forge.cli", "doctor"])
    assert p.returncode == 0, p.stdout + p.stderr
    for text in ["torch", "nvrtc", "cache folder", "job folders", "GB free", "C compiler",
                 "intercept list", "aten::_softmax", "CompositeImplicitAutograd"]:
        assert text in p.stdout


def test_entries_built_for_another_environment_are_reported(tmp_path):
    """After a plugin upgrade or a new compiler every entry is keyed for the old one and cannot
    be served; the process says so (INFO), cache_entries() marks them, doctor counts them."""
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache")}
    p = run_python("import torch, kernel_forge as kf\n"
                   "r = kf.tune('aten::relu', (torch.randn(64, 1000),), iterations=4, margin=-100)\n"
                   "assert r['status'] == 'inserted', r\n", env)
    assert p.returncode == 0, p.stderr
    other_cc = tmp_path / "cc"  # another first line of `cc --version`: another toolchain id
    other_cc.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "other-cc 9.9"; exit 0; }\nexec cc "$@"\n')
    other_cc.chmod(0o755)
    show = "import json, torch, kernel_forge as kf\nprint(json.dumps(kf.cache_entries()))\n"
    for cc, elsewhere in ((None, False), (str(other_cc), True)):
        extra = {**env, "KFORGE_LOG": "info", **({"CC": cc} if cc else {})}
        p = run_python(show, extra)
        assert p.returncode == 0, p.stderr
        (e,) = json.loads(p.stdout.strip().splitlines()[-1])
        assert e["elsewhere"] is elsewhere and e["served_here"] is not elsewhere, e
        assert ("1 of 1 entries" in p.stderr) is elsewhere, p.stderr
        d = run_python(["-m", "kernel_forge.cli", "doctor"], extra)
        assert ("1 built for another environment" in d.stdout) is elsewhere, d.stdout
        ls = run_python(["-m", "kernel_forge.cli", "cache", "ls"], extra)
        assert ls.returncode == 0 and ("elsewhere" in ls.stdout) is elsewhere, ls.stdout
