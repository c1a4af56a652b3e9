"""The layout rules of docs/architecture.md ("Layout"): include arrows run one way, the include
graph in docs/ is current, and every subsystem folder says what it owns."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "include_graph.py")


def test_include_arrows_run_one_way():
    r = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_include_graph_listing_is_current():
    r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, check=True)
    with open(os.path.join(ROOT, "docs", "include-graph.md")) as f:
        assert f.read() == r.stdout, "run: python3 scripts/include_graph.py --write docs/include-graph.md"


def test_a_forbidden_arrow_is_found(tmp_path):
    # the checker itself, on a small tree: a plugin file including a forge header is reported
    (tmp_path / "plugin").mkdir()
    (tmp_path / "forge" / "job").mkdir(parents=True)
    (tmp_path / "forge" / "job" / "job.h").write_text("")
    (tmp_path / "plugin" / "probe.c").write_text('#include "forge/job/job.h"\n')
    r = subprocess.run([sys.executable, SCRIPT, "--check", "--root", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "plugin may not include forge/job/job.h" in r.stderr


def test_every_subsystem_folder_has_a_readme():
    for d in ("common", "compile", "cache", "plugin", "torch_ext", "forge"):
        assert os.path.isfile(os.path.join(ROOT, d, "README.md")), d
