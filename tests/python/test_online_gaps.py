"""Online tuning beside a model (issue 21): the worker's timings wait for a quiet gap in the
model's calls (its --gate, answered by the tuner) and resume when the calls stop."""

import threading
import time

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs, _tuner


class Bursts(threading.Thread):
    """A fake model: bursts of intercepted calls (`busy_s`) with pauses (`idle_s`) between,
    each burst's (start, end) in time.monotonic()."""

    def __init__(self, busy_s, idle_s):
        super().__init__(daemon=True)
        self.busy_s, self.idle_s = busy_s, idle_s
        self.stop = threading.Event()
        self.bursts = []
        self.x = torch.randn(16, 16)

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            self.bursts.append((t0, float("inf")))  # under way
            while time.monotonic() - t0 < self.busy_s and not self.stop.is_set():
                torch.softmax(self.x, -1)
            self.bursts[-1] = (t0, time.monotonic())
            self.stop.wait(self.idle_s)

    def busy_at(self, t):
        return any(a <= t <= b for a, b in list(self.bursts))


def _job(tmp_path):
    """A softmax job folder whose start points are compiled already (JOB_DIR/blobs)."""
    x = torch.randn(96, 700)
    job = str(tmp_path / "job")
    kf.tune("aten::_softmax", (x, -1, False), insert=False, job_dir=job,
            _worker_args=["--starts-only", "--nice", "10", "--cores", "1"])
    return job


def _gated_run(job, tuner, model, args=("--starts-only",)):
    """The ramp pass of `job` with --gate answered by `tuner`; per gate: the node events seen
    before it, when the tuner let it go, and whether the model was busy then."""
    nodes, gates = [], []

    def gate(ev):
        seen = len(nodes)
        tuner._gate(ev)
        t = time.monotonic()
        gates.append({"node": ev["node"], "nodes_before": seen, "go": t,
                      "busy": model.busy_at(t)})

    res = _jobs.run_worker(job, extra_args=[*args, "--no-insert"],
                           on_progress=lambda ev: ev.get("event") == "node" and nodes.append(ev),
                           gate=gate)
    return res, nodes, gates


def test_worker_times_only_in_the_models_quiet_gaps(tmp_path):
    job = _job(tmp_path)
    tuner = _tuner.OnlineTuner()  # not started: only its gate is used
    tuner.cfg.update(quiet_wait_s=30.0, quiet_ms=50.0)
    model = Bursts(busy_s=0.6, idle_s=0.4)
    model.start()
    try:
        time.sleep(0.1)  # the model is busy when the worker starts
        res, nodes, gates = _gated_run(job, tuner, model, ("--iterations", "4"))
    finally:
        model.stop.set()
        model.join()
    print(f"\n{len(gates)} gates, {res['gated_s']:.2f} s waited, bursts {len(model.bursts)}; "
          f"go at {[round(g['go'] - model.bursts[0][0], 2) for g in gates]}")
    assert res["iterations"] >= 2 and len(gates) == len(nodes) == res["iterations"], (res, gates)
    for i, g in enumerate(gates):
        assert g["node"] == i and g["nodes_before"] == i, gates  # no node timed before its go
        assert not g["busy"], (i, gates, model.bursts)  # never while the model's calls flow
        # the go came after a burst ended, at least the quiet window after its last call
        ended = [b for a, b in model.bursts if b <= g["go"]]
        assert ended and g["go"] - ended[-1] >= 0.045, (i, g, model.bursts)
    st = tuner.status()["gates"]
    assert st["quiet"] == len(gates) and st["busy"] == 0, st
    # it waited for the first burst to end (it was 0.1 s in when the worker started), and the
    # waits are idle time for the duty cycle
    assert res["gated_s"] > 0.1 and res["slept_s"] >= res["gated_s"], res


def test_a_model_that_never_pauses_is_timed_anyway_after_the_wait(tmp_path):
    job = _job(tmp_path)
    tuner = _tuner.OnlineTuner()
    tuner.cfg.update(quiet_wait_s=0.2, quiet_ms=50.0)
    model = Bursts(busy_s=1e9, idle_s=0)
    model.start()
    try:
        t = time.monotonic()
        res, nodes, gates = _gated_run(job, tuner, model, ("--iterations", "3"))
        wall = time.monotonic() - t
    finally:
        model.stop.set()
        model.join()
    st, n = tuner.status()["gates"], len(gates)
    assert res["iterations"] == n >= 2 and st["busy"] == n, (res, st)
    assert all(g["busy"] for g in gates), gates
    # 0.2 s, then half of that, then one window after each miss: a model that never
    # pauses does not pay the whole wait at every timing
    assert st["wait_s"] <= 0.2 + 0.1 * (n - 1) + 0.1 and wall < 60, (st, wall)


def test_quiet_window_counts_from_the_last_call():
    model = Bursts(busy_s=0.3, idle_s=5.0)
    model.start()
    try:
        time.sleep(0.05)
        assert _tuner.wait_quiet(2.0, 0.05) is True
        t = time.monotonic()
        end = model.bursts[-1][1]
    finally:
        model.stop.set()
        model.join()
    assert 0.045 <= t - end < 0.3, t - end  # noticed soon after the burst's last call


@pytest.mark.gpu
def test_on_cuda_a_gap_also_needs_the_models_queued_work_done():
    """The model issues its calls ahead of the GPU: no calls does not mean an idle GPU."""
    x = torch.randn(8192, 8192, device="cuda")
    torch.cuda.synchronize()
    t = time.monotonic()
    for _ in range(60):
        y = x @ x  # about a second of work, queued in a few milliseconds
    queued = time.monotonic() - t
    assert _tuner.wait_quiet(0.3, 0.05, idle=_tuner.cuda_idle) is False, queued
    torch.cuda.synchronize()
    assert _tuner.wait_quiet(1.0, 0.05, idle=_tuner.cuda_idle) is True
    del y


def test_a_gpu_row_named_as_stats_names_it_waits_for_the_gpu(monkeypatch):
    """kf.stats() names a GPU row's device "cuda:0": the gap must also wait for the GPU's queue
    (the tuner once compared the name with "cuda" and treated every GPU row as a host one)."""
    seen = []
    monkeypatch.setattr(_tuner, "wait_quiet", lambda wait_s, window, idle=None: seen.append(idle) or True)
    tuner = _tuner.OnlineTuner()
    tuner.cfg.update(quiet_wait_s=0.2, quiet_ms=50.0)
    for device in ("cuda:0", "cpu"):
        tuner._begin({"key": "k", "signature": "s", "device": device})
        assert tuner.quiet() is True
    assert seen == [_tuner.cuda_idle, None]
    assert _tuner.on_gpu("cuda:1") and not _tuner.on_gpu("cpu") and not _tuner.on_gpu(None)
