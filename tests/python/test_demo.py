"""The README's demo, as a new user runs it: a fresh process with the default settings (no
KFORGE_* variable; KFORGE_INTERCEPT=cached), which must record, tune and serve."""

from conftest import run_python


def test_demo_tunes_and_serves_with_the_defaults(tmp_path):
    p = run_python(["-m", "kernel_forge.examples.demo", "--iterations", "8", "--batch", "64",
                    "--dim", "256"], {"KFORGE_CACHE_DIR": str(tmp_path), "KFORGE_INTERCEPT": ""})
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    hot = int(out.split("1. recorded: ")[1].split()[0])
    assert hot >= 2, out
    served = out.split("served by forged kernels: ")[1].splitlines()[0]
    assert served != "nothing (eager kept)" and "aten::" in served, out
    assert "output vs eager: max abs diff" in out
