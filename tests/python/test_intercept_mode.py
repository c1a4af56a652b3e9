"""KFORGE_INTERCEPT: by default (cached) a process that neither records nor tunes intercepts only
the ops its cache has kernels for, so every other op runs with no plugin code on its path; the
rest are registered when recording, tuning or adding a kernel begins, and `all` restores the
whole list from the start."""

import json

import pytest

from conftest import run_python

RELU = """
#define N 512L
void kf_kernel(const float *x, float *y) {
    for (long i = 0; i < N; i++) y[i] = x[i] < 0.f ? 0.f : x[i];
}"""
LAUNCH = {"entry": "kf_kernel", "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0,
          "args": ["const float*", "float*"]}

REPORT = ("import json, torch, kernel_forge as kf\n"
          "x = torch.randn(512)\n"
          "for _ in range(20):\n"
          "    y = torch.relu(x); z = torch.softmax(x, -1); w = x + 1\n"
          "rows = {r['op']: r for r in kf.stats()}\n"
          "print(json.dumps({'ops': kf.intercepted_ops(), 'stats': sorted(rows),\n"
          "                  'relu_served': rows.get('aten::relu', {}).get('served', 0),\n"
          "                  'equal': bool(torch.equal(y, x.clamp_min(0)))}))\n")


def fresh(code: str, cache, **env) -> dict:
    p = run_python(code, {"KFORGE_CACHE_DIR": str(cache), "KFORGE_INTERCEPT": "cached", **env})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]) | {"stderr": p.stderr}


@pytest.fixture(scope="module")
def relu_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("intercept-cache")
    code = ("import json, torch, kernel_forge as kf\n"
            f"kf.add_kernel('aten::relu', (torch.randn(512),), {RELU!r}, {json.dumps(LAUNCH)!r},\n"
            "              random_inputs=1, allow_slower=True)\n"
            "print(json.dumps({}))\n")
    fresh(code, cache)
    return cache


def test_empty_cache_intercepts_nothing(tmp_path):
    r = fresh(REPORT, tmp_path / "empty")
    assert r["ops"] == [] and r["stats"] == [] and r["equal"]


def test_only_ops_with_kernels_are_intercepted_and_served(relu_cache):
    r = fresh(REPORT, relu_cache, KFORGE_LOG="info")
    assert r["ops"] == ["aten::relu"]
    assert r["stats"] == ["aten::relu"]  # softmax and add ran with nothing of ours on their path
    assert r["relu_served"] > 0 and r["equal"]
    assert "intercepting 1 of" in r["stderr"]


def test_all_restores_the_whole_list(relu_cache):
    r = fresh(REPORT, relu_cache, KFORGE_INTERCEPT="all")
    assert len(r["ops"]) > 100 and {"aten::relu", "aten::_softmax"} <= set(r["stats"])
    assert r["relu_served"] > 0


def test_recording_registers_every_op(relu_cache):
    code = REPORT.replace("x = torch.randn(512)\n", "x = torch.randn(512)\nkf.set_recording(True)\n")
    r = fresh(code, relu_cache)
    assert len(r["ops"]) > 100 and "aten::_softmax" in r["stats"] and r["relu_served"] > 0
    r = fresh(REPORT, relu_cache, KFORGE_RECORD="1")
    assert len(r["ops"]) > 100


def test_reload_registers_the_ops_of_new_entries(tmp_path):
    cache = tmp_path / "late"
    adder = tmp_path / "add.py"  # another process puts a relu kernel into the cache meanwhile
    adder.write_text("import json, torch, kernel_forge as kf\n"
                     f"kf.add_kernel('aten::relu', (torch.randn(512),), {RELU!r},\n"
                     f"              {json.dumps(LAUNCH)!r}, random_inputs=1, allow_slower=True)\n")
    code = ("import json, subprocess, sys, torch, kernel_forge as kf\n"
            "before = kf.intercepted_ops()\n"
            f"subprocess.run([sys.executable, {str(adder)!r}], check=True)\n"
            "kf.reload_cache()\n"
            "x = torch.randn(512)\n"
            "for _ in range(5):\n"
            "    y = torch.relu(x)\n"
            "served = sum(r['served'] for r in kf.stats() if r['op'] == 'aten::relu')\n"
            "print(json.dumps({'before': before, 'after': kf.intercepted_ops(), 'served': served}))\n")
    r = fresh(code, cache)
    assert r["before"] == [] and r["after"] == ["aten::relu"] and r["served"] > 0


def test_an_unknown_mode_is_reported_and_falls_back_to_cached(tmp_path):
    r = fresh(REPORT, tmp_path / "c", KFORGE_INTERCEPT="everything")
    assert r["ops"] == []
    assert "KFORGE_INTERCEPT='everything' is not all|cached" in r["stderr"]
