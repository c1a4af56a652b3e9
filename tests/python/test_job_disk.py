"""Job folders and the disk: a job is not written when its cases would fill the disk, and a
finished job's cases (the inputs and eager's outputs of every case) are removed."""
import json
import os
import time

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs, _tuner


def _job(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_JOBS_DIR", str(tmp_path / "jobs"))
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    key = kf.signature_key("aten::add.Tensor", x, y)
    return key, _tuner.write_job_from_captures(key, [[x, y]], {"iterations": 1})


def test_the_free_space_kept_by_default_and_from_the_variable(monkeypatch):
    monkeypatch.delenv("KFORGE_JOBS_MIN_FREE_GB", raising=False)
    assert _jobs.min_free_bytes(10**12) == 5 * 10**10  # 5% of a large disk
    assert _jobs.min_free_bytes(10**10) == 2 * 10**9  # 2 GB at least
    monkeypatch.setenv("KFORGE_JOBS_MIN_FREE_GB", "0.5")
    assert _jobs.min_free_bytes(10**12) == 5 * 10**8
    monkeypatch.setenv("KFORGE_JOBS_MIN_FREE_GB", "lots")
    with pytest.raises(kf.KernelForgeError, match="KFORGE_JOBS_MIN_FREE_GB='lots'"):
        _jobs.min_free_bytes(10**12)


def test_a_job_that_would_fill_the_disk_is_not_written(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_JOBS_MIN_FREE_GB", "1e12")  # more than any disk has
    with pytest.raises(_jobs.NotTunable) as e:
        _job(tmp_path, monkeypatch)
    msg = str(e.value)
    assert msg.startswith("add.Tensor(f32[64,64]") and "MB and" in msg and "GB free" in msg, msg
    assert "KFORGE_JOBS_MIN_FREE_GB" in msg, msg
    assert os.listdir(tmp_path / "jobs") == []  # no half-written folder left


def test_a_finished_job_keeps_its_record_and_loses_its_cases(tmp_path, monkeypatch):
    monkeypatch.delenv("KFORGE_KEEP_CASES", raising=False)
    _, job = _job(tmp_path, monkeypatch)
    open(os.path.join(job, "confirm.pt"), "wb").close()
    assert os.listdir(os.path.join(job, "cases"))
    _jobs.drop_cases(job)
    assert sorted(os.listdir(job)) == ["job.json"]
    with open(os.path.join(job, "job.json")) as f:
        assert json.load(f)["cases"]  # what they were is still said
    with pytest.raises(kf.KernelForgeError, match="KFORGE_KEEP_CASES=1 keeps them"):
        _jobs.run_worker(job)
    _jobs.drop_cases(None)  # a row that never got a job


def test_keep_cases_keeps_them(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_KEEP_CASES", "1")
    _, job = _job(tmp_path, monkeypatch)
    _jobs.drop_cases(job)
    assert os.listdir(os.path.join(job, "cases"))


@pytest.mark.parametrize("got, kept", [("ramped", True), ("retry", True), ("tuned", False)])
def test_the_online_tuner_drops_a_job_once_nothing_more_is_due(tmp_path, monkeypatch, got, kept):
    monkeypatch.delenv("KFORGE_KEEP_CASES", raising=False)
    key, job = _job(tmp_path, monkeypatch)
    t = _tuner.OnlineTuner()
    t.jobs[key] = job
    monkeypatch.setattr(t, "tune_fleet", lambda row, search: got)
    assert t.tune_pass({"key": key}, {}) == got
    assert os.path.isdir(os.path.join(job, "cases")) == kept
    assert (key in t.jobs) == kept  # a later pass writes the job again


def test_kforge_jobs_lists_and_cleans_the_idle_jobs(tmp_path, monkeypatch, capsys):
    from kernel_forge import cli

    monkeypatch.setenv("KFORGE_KEEP_CASES", "1")  # clean is asked for: it removes them anyway
    _, old = _job(tmp_path, monkeypatch)
    _, new = _job(tmp_path, monkeypatch)
    with open(os.path.join(old, "result.json"), "w") as f:
        f.write("{}")
    past = time.time() - 2 * _jobs.JOB_IDLE_S
    for f in ("job.json", "result.json"):
        os.utime(os.path.join(old, f), (past, past))
    os.symlink(old, tmp_path / "jobs" / "a-link")  # not a job folder of its own: not listed
    assert cli.main(["jobs", "ls", "--dir", str(tmp_path / "jobs")]) == 0
    out = capsys.readouterr().out
    assert "2 job folders in" in out and out.count("done") == 1 and out.count("running") == 1, out
    assert cli.main(["jobs", "clean", "--dir", str(tmp_path / "jobs")]) == 0
    out = capsys.readouterr().out
    assert "removed 1 jobs' cases" in out and "1 left alone" in out, out
    assert not os.path.exists(os.path.join(old, "cases")) and os.path.isfile(os.path.join(old, "job.json"))
    assert os.listdir(os.path.join(new, "cases"))  # searched a moment ago: kept
    assert cli.main(["jobs", "clean", "--all", "--dir", str(tmp_path / "jobs")]) == 0
    assert not os.path.exists(old) and os.path.isdir(new)


def test_the_online_tuner_writes_a_job_again_when_its_cases_were_cleaned(tmp_path, monkeypatch):
    key, job = _job(tmp_path, monkeypatch)
    t = _tuner.OnlineTuner()
    t.jobs[key] = job
    _jobs.remove_cases(job)
    monkeypatch.setattr(t, "_may_prepare", lambda row: False)  # it would write one: say where
    assert t._prepare({"key": key}, {}) is None


def test_a_stopped_tuner_leaves_no_cases(tmp_path, monkeypatch):
    # a process that exits before a signature's deep pass: nothing else will search its job
    monkeypatch.delenv("KFORGE_KEEP_CASES", raising=False)
    key, job = _job(tmp_path, monkeypatch)
    t = _tuner.OnlineTuner()
    t._write_status = lambda: None
    t.jobs[key] = job
    t.shutdown()
    assert not os.path.exists(os.path.join(job, "cases")) and os.path.isfile(os.path.join(job, "job.json"))
