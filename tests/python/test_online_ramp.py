"""Time from "hot" to the first landed kernel (issue 21): the duty limit is a token bucket with
a burst credit (KFORGE_TUNE_BURST), so the first searches do not wait for duty accrued from
zero while the long-run share stays KFORGE_TUNE_DUTY; a model that never pauses stops costing
every timing a long wait for a gap; the status says the pass again after a duty wait."""

import json
import os
import time

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs, _tuner

from fixtures.busy import busy_softmax


class _Clock:
    """Stands in for the tuner's stop event and time.monotonic: a duty wait advances it."""

    def __init__(self):
        self.t = 1000.0
        self.waits = []

    def monotonic(self):
        return self.t

    def wait(self, s):
        self.waits.append(s)
        self.t += s
        return False

    def is_set(self):
        return False

    def set(self):  # the tuner's atexit shutdown
        pass


def _tuner_with(monkeypatch, **cfg):
    t = _tuner.OnlineTuner()
    t.cfg.update(cfg)
    t.credit = t.cfg["burst_s"]
    clock = _Clock()
    monkeypatch.setattr(_tuner.time, "monotonic", clock.monotonic)
    t.stop = clock
    t._write_status = lambda: None
    return t, clock


def test_the_first_searches_spend_the_burst_without_a_duty_wait(monkeypatch):
    t, clock = _tuner_with(monkeypatch, duty=0.1, burst_s=5.0)
    assert t.pay_duty() == 5.0 and clock.waits == []  # the first search: the whole burst
    clock.t += 4.0  # its worker worked 2 s (the credit let it) in 4 s of wall time
    t.used(2.0)
    credit = t.pay_duty()  # 5 - 2 + 0.1 x 4: no wait for the second search either
    assert clock.waits == [] and abs(credit - 3.4) < 1e-9, credit
    clock.t += 4.0
    t.used(4.0)  # 3.4 + 0.4 - 4 = -0.2 s: the debt is paid at the duty rate, 2 s
    assert t.pay_duty() == 0.0 and len(clock.waits) == 1 and abs(clock.waits[0] - 2.0) < 1e-9
    # long idle time refills one burst, no more
    clock.t += 3600
    assert t.pay_duty() == 5.0


def test_the_long_run_share_stays_the_duty(monkeypatch):
    """A tuner that always has work: over a long stretch its work is at most burst + duty x T."""
    t, clock = _tuner_with(monkeypatch, duty=0.1, burst_s=5.0)
    t0, worked = clock.t, 0.0
    for _ in range(200):
        credit = t.pay_duty()
        # a worker that works 1.5 s, its sleeps keeping busy <= credit + duty x wall (but the
        # last node, 0.5 s, whose sleep is left owed)
        wall = max(1.5, (1.5 - 0.5 - credit) / 0.1 + 0.5)
        clock.t += wall
        t.used(1.5)
        worked += 1.5
    total = clock.t - t0
    assert worked <= 5.0 + 0.1 * total + 0.5, (worked, total)
    assert worked >= 0.09 * total, (worked, total)  # and the bucket does not starve it


def test_without_a_burst_the_duty_waits_as_before(monkeypatch):
    t, clock = _tuner_with(monkeypatch, duty=0.1, burst_s=0.0)
    assert t.pay_duty() == 0.0 and clock.waits == []
    clock.t += 3.0
    t.used(1.0)  # 1 s of work needs 10 s of wall time: 7 s left to wait
    t.pay_duty()
    assert len(clock.waits) == 1 and abs(clock.waits[0] - 7.0) < 1e-9, clock.waits


def test_the_worker_spends_its_duty_credit_before_sleeping(tmp_path):
    """kforge-worker --duty-credit S: a search that works less than S does not sleep at all,
    at any duty; without it, the same search sleeps between its nodes."""
    x = torch.randn(96, 700)
    job = str(tmp_path / "job")
    common = ["--nice", "10", "--cores", "1"]
    kf.tune("aten::_softmax", (x, -1, False), iterations=3, insert=False, job_dir=job,
            _worker_args=["--duty", "0.05", "--duty-credit", "600", *common])
    with open(os.path.join(job, "result.json")) as f:
        res = json.load(f)
    assert res["slept_s"] == 0 and res["wall_s"] > 0, res
    kf.tune("aten::_softmax", (x, -1, False), iterations=3, insert=False, job_dir=job,
            _worker_args=["--duty", "0.5", *common])
    with open(os.path.join(job, "result.json")) as f:
        res = json.load(f)
    assert res["slept_s"] > 0, res


def test_a_model_that_never_pauses_waits_one_window_after_two_misses():
    t = _tuner.OnlineTuner()
    t.cfg.update(quiet_wait_s=0.4, quiet_ms=50.0)
    with busy_softmax():
        t0 = time.monotonic()
        got = [t.quiet() for _ in range(6)]
        wall = time.monotonic() - t0
    assert got == [False] * 6, got
    assert t.wait_s == 0.05, t.wait_s  # one quiet window: still enough to see a gap
    # 0.4 + 0.2, then 0.05 each (before: 0.1 each, two windows); the polls' slack besides
    assert wall < 0.6 + 4 * 0.05 + 0.15, wall
    assert t.quiet() is True and t.wait_s is None and t.misses == 0  # a gap: the full wait again


def test_the_status_says_the_pass_again_after_a_duty_wait(monkeypatch, tmp_path):
    """A search that had to wait for its duty is shown as its pass ("ramp"), not "duty wait",
    while its worker runs (benchmarks/online_tuning.py counts "while tuning" by the phase), and
    the worker gets the bucket's credit."""
    t = _tuner.OnlineTuner()
    t.cfg.update(duty=0.5, burst_s=1.0, quiet_wait_s=0.0)
    t.credit, t.credit_t = -0.05, time.monotonic()  # a debt of 0.1 s at duty 0.5
    seen = {}

    class Child:
        def kill(self):
            pass

        def poll(self):
            return 0

        def wait(self, timeout=None):
            return 0

    def spawn(job_dir, staging):
        c = Child()
        t.procs.append(c)
        return c

    def run_worker(job_dir, extra_args, **kw):
        seen.update(phase=t.state["phase"], step=t.state["step"], args=list(extra_args))
        return {"status": "no_faster_kernel", "eager_us": 10.0, "wall_s": 0.01, "slept_s": 0.0,
                "busy_s": 0.01}

    monkeypatch.setattr(t, "_prepare", lambda row, search: str(tmp_path))
    monkeypatch.setattr(t, "spawn_confirm", spawn)
    monkeypatch.setattr(_jobs, "run_worker", run_worker)
    row = {"key": "00000000000000ab", "signature": "softmax(f32[4])", "device": "cpu"}
    assert t.tune_one(row, {"cache_dir": str(tmp_path / "cache")}) == "ramped"
    assert t.state["time_spent_s"]["duty_wait"] > 0.05
    assert seen["phase"] == "ramp" and seen["step"] == "worker", seen
    i = seen["args"].index("--duty-credit")
    assert 0.0 <= float(seen["args"][i + 1]) <= 1.0, seen


def _job_json(tmp_path, backend):
    with open(tmp_path / "job.json", "w") as f:
        json.dump({"backend": backend, "device_index": 0, "key": "00000000000000ab"}, f)
    return str(tmp_path)


def test_the_confirmation_child_makes_no_device_ready_for_a_host_job(tmp_path):
    from kernel_forge import _confirm

    assert _confirm.warm_device(_job_json(tmp_path, "host")) == "cpu"
    assert _confirm.warm_device(str(tmp_path / "missing")) == ""  # no job.json: nothing, no raise
    if not torch.cuda.is_available():  # a CUDA job on a machine without one: nothing, no raise
        assert _confirm.warm_device(_job_json(tmp_path, "nvrtc")) == ""


@pytest.mark.gpu
def test_the_confirmation_child_makes_its_cuda_context_before_the_winner_is_in(tmp_path):
    """Its first CUDA call (about a second) overlaps the worker's search, not the confirmation."""
    from conftest import run_python

    job = _job_json(tmp_path, "nvrtc")
    p = run_python("import torch\nfrom kernel_forge import _confirm\n"
                   f"d = _confirm.warm_device({job!r})\n"
                   "print('RESULT', d, torch.cuda.is_initialized())\n", {}, timeout=200)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split("RESULT ")[-1].split() == ["cuda:0", "True"], p.stdout


def test_a_stopped_tuner_starts_no_worker(monkeypatch):
    """After shutdown() nothing new runs beside the model: _search refuses to start a worker,
    and a process added to the tuner's list after the stop is killed at once."""
    t = _tuner.OnlineTuner()
    t._write_status = lambda: None
    started = []
    monkeypatch.setattr(_jobs, "run_worker", lambda *a, **k: started.append(a))
    t.shutdown()
    with pytest.raises(_tuner.Stopped):
        t._search({"signature": "s", "key": "k", "device": "cpu"}, "/nonexistent", "ramp", False)
    assert started == []

    class Proc:
        killed = False

        def kill(self):
            self.killed = True

    p = Proc()
    t.procs.append(p)
    assert p.killed
