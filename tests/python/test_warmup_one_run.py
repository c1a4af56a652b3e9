"""`kforge warmup` runs the script once when it runs more than RANK_AFTER_FORWARDS module
forwards: the recording child ranks after that many and captures the chosen signatures' real
calls from the next ones. A script with fewer forwards runs a second time to capture, as before."""

import json
import os

from conftest import run_python

SCRIPT = """
import sys, torch
class M(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x * 1.5)
m = M()
x = torch.randn(64, 256)
for _ in range(int(sys.argv[1])):
    y = m(x)
print("forwards done", file=sys.stderr)
"""


def warm(tmp_path, forwards: int, *opts: str):
    (tmp_path / "model.py").write_text(SCRIPT)
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache")}
    # --no-check: the runs of the script are counted here (test_model_check.py counts the check's)
    p = run_python(["-m", "kernel_forge.cli", "warmup", "--iterations", "3", "--no-check", *opts, "--json",
                    str(tmp_path / "w.json"), str(tmp_path / "model.py"), str(forwards)], env,
                   timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open(tmp_path / "w.json") as f:
        return p, {r["signature"]: r for r in json.load(f)["rows"]}


def test_a_script_with_enough_forwards_is_run_once(tmp_path):
    p, rows = warm(tmp_path, 12)
    out = p.stdout + p.stderr
    assert "captured in the recording run (after 5 module forwards): no second run" in out
    assert "(capture)" not in out and out.count("forwards done") == 1
    gelu = [r for s, r in rows.items() if s.startswith("gelu(")]
    assert gelu and gelu[0]["job_dir"] and gelu[0]["iterations"] > 0, rows
    with open(f"{gelu[0]['job_dir']}/job.json") as f:
        kinds = [c["kind"] for c in json.load(f)["cases"]]
    assert kinds.count("recorded") == 3  # the real calls of forwards 6..8
    assert not os.path.exists(f"{gelu[0]['job_dir']}/cases")  # the warm-up is over: gone


def test_a_script_with_few_forwards_runs_again_to_capture(tmp_path):
    p, rows = warm(tmp_path, 4)
    out = p.stdout + p.stderr
    assert "(capture)" in out and out.count("forwards done") == 2
    assert any(s.startswith("gelu(") and r["iterations"] > 0 for s, r in rows.items()), rows


def test_margin_reaches_the_search(tmp_path):
    """--margin is the job's: -100 inserts any verified kernel (for testing on a busy box)."""
    p, rows = warm(tmp_path, 12, "--margin", "-100", "--ops", "gelu")
    (gelu,) = [r for s, r in rows.items() if s.startswith("gelu(")]
    with open(f"{gelu['job_dir']}/job.json") as f:
        assert json.load(f)["search"]["margin"] == -100
    assert gelu["status"] == "inserted", gelu
    p = run_python(["-m", "kernel_forge.cli", "warmup", "--margin", "1.5",
                    str(tmp_path / "model.py")], {"KFORGE_CACHE_DIR": str(tmp_path / "cache")})
    assert p.returncode == 2 and "--margin must be in [-100, 0.99], not 1.5" in p.stderr, p.stderr
