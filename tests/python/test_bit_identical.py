"""Every intercepted op gives bit-identical results (or the identical error) with the plugin.

op_cases.py runs twice, in two subprocesses: once with KFORGE_DISABLE=1 (kernel_forge is not
imported at all: the true eager baseline) and once with the plugin loaded. Per case the outcome
kind, and then dtype, shape, strides, storage offset and every byte of every output (NaN
positions included), or the error type and message, must match, as must the warnings eager
emitted. The plugin run must also have intercepted the op each case targets, so no case can
pass without going through the interceptor.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import op_cases  # noqa: E402  (only the case list; no case runs in this process)

CASE_NAMES = list(op_cases.CASES)
TIMEOUT_S = 300


def _env(disable: bool) -> dict:
    # a KFORGE_* setting from the caller (KFORGE_OPS, KFORGE_TUNE, ...) must not change the runs
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KFORGE_") or k in ("KFORGE_TEST_DEVICE", "KFORGE_INTERCEPT")}
    # an empty kernel cache: no entry of the user's may serve a case
    env["KFORGE_CACHE_DIR"] = os.path.join(ROOT, "build", "empty-kernel-cache")
    if disable:
        env["KFORGE_DISABLE"] = "1"
    return env


def run_both(script: Path, outdir: Path, extra_args=()) -> tuple[dict, dict]:
    """Run `script OUT` as the eager baseline and with the plugin, in parallel; load both."""
    procs = {}
    for mode in ("eager", "plugin"):
        out = outdir / f"{mode}.pt"
        procs[mode] = (out, subprocess.Popen(
            [sys.executable, str(script), str(out), *extra_args], cwd=ROOT,
            env=_env(disable=(mode == "eager")), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    loaded = {}
    for mode, (out, p) in procs.items():
        try:
            stdout, stderr = p.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
            pytest.fail(f"{mode} run of {script.name} timed out\n{stdout}\n{stderr}")
        if p.returncode != 0:
            pytest.fail(f"{mode} run of {script.name} exited with {p.returncode}\n"
                        f"stdout:\n{stdout[-4000:]}\nstderr:\n{stderr[-8000:]}")
        loaded[mode] = torch.load(out, weights_only=True)
    return loaded["eager"], loaded["plugin"]


def tensor_bytes(t: torch.Tensor) -> bytes:
    c = t.detach().clone(memory_format=torch.contiguous_format)
    return bytes(c.untyped_storage())


def assert_same_tensor(eager: torch.Tensor, plugin: torch.Tensor, what: str) -> None:
    assert plugin.dtype == eager.dtype, f"{what}: dtype {plugin.dtype} != eager {eager.dtype}"
    assert plugin.shape == eager.shape, f"{what}: shape {tuple(plugin.shape)} != eager {tuple(eager.shape)}"
    assert plugin.stride() == eager.stride(), f"{what}: strides {plugin.stride()} != eager {eager.stride()}"
    if eager.is_floating_point() or eager.is_complex():
        nan_e, nan_p = torch.isnan(eager), torch.isnan(plugin)
        assert torch.equal(nan_e, nan_p), (
            f"{what}: NaN positions differ ({int(nan_e.sum())} NaN in eager, {int(nan_p.sum())} "
            "with the plugin)")
    be, bp = tensor_bytes(eager), tensor_bytes(plugin)
    assert len(be) == len(bp) == eager.numel() * eager.element_size(), f"{what}: byte length"
    if be != bp:
        flat_e = eager.detach().reshape(-1)
        flat_p = plugin.detach().reshape(-1)
        size = eager.element_size()
        bad = [i for i in range(eager.numel()) if be[i * size:(i + 1) * size] != bp[i * size:(i + 1) * size]]
        i = bad[0]
        pytest.fail(f"{what}: {len(bad)} of {eager.numel()} elements differ in their bits; first at "
                    f"flat index {i}: eager {flat_e[i].item()!r}, plugin {flat_p[i].item()!r}")


def compare_results(eager, plugin, what: str) -> None:
    """Same outcome kind; tensors bit-identical; errors of the same type and message."""
    e_err = isinstance(eager, tuple) and len(eager) == 3 and eager[0] == "error"
    p_err = isinstance(plugin, tuple) and len(plugin) == 3 and plugin[0] == "error"
    if e_err or p_err:
        assert e_err and p_err, (
            f"{what}: eager {'raised ' + eager[1] + ': ' + eager[2] if e_err else 'returned tensors'}"
            f" but with the plugin it {'raised ' + plugin[1] + ': ' + plugin[2] if p_err else 'returned tensors'}")
        assert plugin[1] == eager[1], f"{what}: error type {plugin[1]} != eager {eager[1]}"
        assert plugin[2] == eager[2], (
            f"{what}: error message differs\n  eager:  {eager[2]!r}\n  plugin: {plugin[2]!r}")
        return
    assert isinstance(eager, list) and isinstance(plugin, list), what
    assert len(plugin) == len(eager), f"{what}: {len(plugin)} outputs != eager {len(eager)}"
    for i, (e, p) in enumerate(zip(eager, plugin)):
        assert_same_tensor(e, p, f"{what} output {i}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_both(HERE / "op_cases.py", tmp_path_factory.mktemp("op_cases"))


def test_runs_are_baseline_and_plugin(runs):
    eager, plugin = runs
    assert op_cases.STATS_KEY not in eager
    assert eager[op_cases.BASELINE_KEY] == {"plugin_loaded": False}
    info = plugin[op_cases.STATS_KEY]
    assert info["plugin_loaded"] and info["enabled"]
    assert not info["ops_info"]["disabled_by_env"]
    assert info["ops_info"]["error"] == ""
    names = set(CASE_NAMES)
    assert set(eager[op_cases.META_KEY]) == names
    assert set(plugin[op_cases.META_KEY]) == names
    # guard against a vacuous run: most cases return tensors, and some raise
    kinds = [isinstance(eager[n], list) for n in CASE_NAMES]
    assert sum(kinds) > 300 and 0 < len(kinds) - sum(kinds) < 80


KEY = "CUDA" if op_cases.DEVICE.startswith("cuda") else "CPU"


def _cpu_intercepted(info: dict) -> set[str]:
    """Ops intercepted on the dispatch key of the device the cases run on."""
    return {o["op"] for o in info["ops_info"]["ops"] if KEY in o["keys"].split(",")}


def test_cases_cover_every_intercepted_cpu_op(runs):
    _, plugin = runs
    info = plugin[op_cases.STATS_KEY]
    cpu_ops = _cpu_intercepted(info)
    assert cpu_ops, "nothing is intercepted on CPU"
    assert cpu_ops <= set(info["intercepted_ops"])
    targeted = {op for c in op_cases.CASES.values() for op in op_cases.targets(c)}
    missing = sorted(cpu_ops - targeted)
    print("ops intercepted on CPU without a case:", missing or "none")
    assert not missing, f"ops intercepted on CPU that no case targets: {missing}"
    unknown = sorted(targeted - cpu_ops)
    assert not unknown, f"cases target ops that are not intercepted on CPU: {unknown}"
    # and each of them was really reached, by at least one case that returned normally
    reached = set()
    for name, c in op_cases.CASES.items():
        if c.op and isinstance(plugin[name], list):
            reached |= {r["op"] for r in info["per_case"][name]
                        if r["op"] in op_cases.targets(c) and r["calls"] > 0}
    assert reached == cpu_ops, f"never reached by a successful case: {sorted(cpu_ops - reached)}"


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case(runs, name):
    eager, plugin = runs
    c = op_cases.CASES[name]
    compare_results(eager[name], plugin[name], name)
    me, mp = eager[op_cases.META_KEY][name], plugin[op_cases.META_KEY][name]
    assert mp["layouts"] == me["layouts"], f"{name}: output layouts differ"
    assert mp["warnings"] == me["warnings"], f"{name}: warnings differ"

    rows = plugin[op_cases.STATS_KEY]["per_case"][name]
    if c.op is None:
        return  # eager raises before any backend kernel: nothing to intercept
    target = [r for r in rows if r["op"] in op_cases.targets(c)]
    calls = sum(r["calls"] for r in target)
    assert calls > 0, (f"{name}: {c.op} was not intercepted; intercepted rows: "
                       f"{sorted({r['op'] for r in rows})}")
    assert all(r["intercepted"] for r in target), target
    # no kernel is registered in this run: every call that completed ran eager
    for r in rows:
        assert r["served"] == 0, r
        if isinstance(eager[name], list):
            assert r["fallback"] == r["calls"], r


def _all_rows(plugin):
    for name, rows in plugin[op_cases.STATS_KEY]["per_case"].items():
        for r in rows:
            yield name, r


def test_rows_report_the_cpu_device(runs):
    # includes calls whose tensors cannot be described (9-d: more than KF_MAX_DIMS)
    _, plugin = runs
    want = "cuda:0" if KEY == "CUDA" else "cpu"
    bad = sorted({(name, r["signature"], r["device"]) for name, r in _all_rows(plugin)
                  if r["device"] != want})
    assert not bad, bad


def test_signatures_of_cases_are_readable(runs):
    # includes signatures truncated inside a tensor list (torch.cat of 97 tensors)
    _, plugin = runs
    bad = sorted({(name, r["signature"]) for name, r in _all_rows(plugin)
                  if "<unreadable signature>" in r["signature"]})
    assert not bad, bad
