"""benchmarks/chain_host_cost.py on the host backend: its own model script for `kforge warmup`,
then a measuring run whose last line reports both sides of every step and the chain served."""

import json
import os

from conftest import ROOT, run_python

SCRIPT = os.path.join(ROOT, "benchmarks", "chain_host_cost.py")


def test_warmed_chain_is_served_and_both_sides_measured(tmp_path):
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    shape = ["--device", "cpu", "--shape", "3,11,96"]
    # serving is what is measured here, not the model check's verdict nor the 2-core host's timing
    w = run_python(["-m", "kernel_forge", "warmup", "--time-budget", "30", "--no-check", "--margin", "-100",
                    SCRIPT] + shape, env)
    assert w.returncode == 0, w.stdout[-3000:] + w.stderr[-3000:]
    assert "chain: add -> native_layer_norm" in w.stdout, w.stdout[-3000:]

    m = run_python([SCRIPT] + shape + ["--measure", "30"], env)
    assert m.returncode == 0, m.stdout[-3000:] + m.stderr[-3000:]
    r = json.loads(m.stdout.strip().splitlines()[-1].removeprefix("HOST "))
    assert r["steps"] == 30 and r["shape"] == [3, 11, 96] and r["dtype"] == "float32"
    for side in ("on", "off"):
        q = r[side]["host_us"]
        assert 0 < q["min"] <= q["p10"] <= q["median"], r
    assert r["on_minus_off_host_us"]["min"] == round(r["on"]["host_us"]["min"] - r["off"]["host_us"]["min"], 2)
    served = [c for c in r["chains"] if c["ops"] == "add.Tensor -> native_layer_norm"]
    # 30 warm forwards and 30 measured ones enabled, 12 heads each: all but the first few served
    assert served and served[0]["state"] == "served" and served[0]["completed"] >= 600, r["chains"]

    # eager alone, on a transposed stream: the bytes the fused chain would move (two inputs, the
    # sum and the norm's output, f32 mean and rstd per row) and GB/s over them
    e = run_python([SCRIPT] + shape + ["--measure", "5", "--no-plugin", "--transposed"], env)
    assert e.returncode == 0, e.stderr[-3000:]
    r = json.loads(e.stdout.strip().splitlines()[-1].removeprefix("HOST "))
    assert "eager" in r and "on" not in r and "chains" not in r
    assert r["transposed"] and r["bytes"] == 3 * 11 * 96 * 4 * 4 + 8 * 3 * 11
    assert r["eager"]["device_gbps"] > 0
