"""Online tuning a user can leave on (KFORGE_TUNE=1): the ramp pass lands a first kernel fast,
the worker keeps to its duty share, a winner is confirmed by interleaved timing before it lands,
and kernel_forge.tuner_status() says what happened."""

import json
import os
import resource
import subprocess
import sys
import threading
import time

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _confirm, _tuner

from conftest import ROOT, run_python
from fixtures.busy import busy_softmax
from fixtures.host_softmax import slow_softmax_source

MODEL = r'''
import json, statistics, sys, time
import torch, torch.nn.functional as F
import kernel_forge as kf
torch.manual_seed(0)
x = torch.randn(128, 512)
w, b = torch.randn(512), torch.randn(512)
def forward():
    y = x
    for _ in range(3):
        y = torch.softmax(F.layer_norm(y, (512,), w, b), -1)
    return y
def loop(seconds, until=None):
    ts, end = [], time.time() + seconds
    while time.time() < end:
        t = time.perf_counter(); forward(); ts.append(time.perf_counter() - t)
        time.sleep(0.001)
        if until and until():
            break
    return ts
kf.disable()  # eager first: nothing recorded, nothing tuned
eager = loop(4)
kf.enable()
t_start = time.time()
during, first, st = [], None, {}
end = time.time() + 75
while time.time() < end:
    st = kf.tuner_status()
    ts = loop(0.5)
    if st["phase"] in ("ramp", "deep"):
        during += ts
    if first is None and any(r["served"] > 0 for r in kf.stats()):
        first = time.time() - t_start
        break
print("RESULT " + json.dumps({"eager_ms": 1e3 * statistics.median(eager),
      "during_ms": 1e3 * statistics.median(during) if during else None,
      "first_served_s": first, "status": kf.tuner_status()}))
'''


def online_env(tmp_path) -> dict:
    """KFORGE_TUNE=1, looking often, a forced margin: what lands does not depend on whether a
    naive host template beats ATen on this machine."""
    return {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "KFORGE_TUNE": "1",
            "KFORGE_TUNE_INTERVAL": "0.5", "KFORGE_RELOAD_MS": "100",
            "KFORGE_TUNE_MARGIN": "-100", "KFORGE_TUNE_MIN_SHARE": "0.2",
            "KFORGE_TUNE_QUIET_WAIT": "0.5", "KFORGE_LOG": "info",
            # two intra-op threads on a shared 2-core box time nothing but contention
            "OMP_NUM_THREADS": "1"}


def test_first_kernel_lands_within_the_ci_bound_and_the_model_keeps_its_speed(tmp_path):
    """(a) and (d): a small CPU model in a loop with KFORGE_TUNE=1; the first served kernel
    (the ramp pass: each template's start point, confirmed, landed) is timed from the moment its
    signature passed the thresholds. The margin is forced (-100) so that landing does not depend
    on whether a naive host template beats ATen on this machine: what is measured is the ramp."""
    p = run_python(MODEL, online_env(tmp_path), timeout=200)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.split("RESULT ")[-1])
    st = res["status"]
    assert res["first_served_s"] is not None, (st, p.stderr[-3000:])
    landed = st["landed"]
    assert landed and landed[0]["pass"] == "ramp", st
    after_hot = landed[0]["after_hot_s"]
    print(f"\nfirst served kernel: {res['first_served_s']:.1f} s after tuning was enabled, "
          f"landed {after_hot:.1f} s after its signature was hot; model median "
          f"{res['during_ms']} ms while searching vs {res['eager_ms']:.3f} ms eager")
    assert after_hot < 60, f"first kernel {after_hot:.1f} s after hot (CI bound 60 s)"
    # (d) the status fields
    for k in ("queue", "current", "time_spent_s", "landed", "refused", "searches", "hot_at",
              "settings", "phase", "elapsed_s"):
        assert k in st, k
    assert st["settings"]["duty"] == 0.1 and st["searches"] >= 1
    assert set(st["time_spent_s"]) == {"prepare", "worker", "worker_busy", "worker_cpu", "duty_wait",
                                    "confirm", "look"}
    assert st["time_spent_s"]["worker_busy"] <= st["time_spent_s"]["worker"]
    # every look is timed: the ranking's Python, which the model's thread waits for
    assert st["looks"] >= 1 and 0 < st["time_spent_s"]["look"] < 0.5 * st["looks"], st
    assert landed[0]["confirmed_ratio"] > 0 and landed[0]["key"] in st["hot_at"]
    assert landed[0]["confirm_s"] >= landed[0]["confirm_ready_s"] > 0, landed[0]
    assert "online tuning: landed" in p.stderr, p.stderr[-3000:]  # one INFO line per kernel
    # the model beside the tuner (duty 10%, one nice'd core of two): generous on a shared box
    if res["during_ms"] is not None:
        assert res["during_ms"] < 1.5 * res["eager_ms"], res
    # the UI's line reads the status file the tuner wrote
    from kernel_forge.ui.server import App

    t = App(str(tmp_path / "cache"), str(tmp_path / "cache" / "jobs")).tuner()
    assert t and t["landed"] >= 1 and t["duty"] == 0.1, t


def test_tuner_status_without_tuning():
    st = kf.tuner_status()
    assert st["enabled"] is False and st["phase"] == "off" and st["landed"] == []


def _cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_the_status_file_is_whole_while_two_threads_write_it(tmp_path, monkeypatch):
    """The tuner's thread and its exit both write tuner-PID.json; `kforge ui` reading it in
    between always gets a whole document (CI once read a half-written one: no tuner line)."""
    monkeypatch.setenv("KFORGE_JOBS_DIR", str(tmp_path))
    t = _tuner.OnlineTuner.__new__(_tuner.OnlineTuner)  # its status file alone, no thread
    t.status_lock = threading.Lock()
    t.status = lambda: {"checks": [], "rows": [{"key": "%040d" % i, "why": "x" * 200} for i in range(400)]}
    path = tmp_path / f"tuner-{os.getpid()}.json"
    stop = threading.Event()

    def write():
        while not stop.is_set():
            t._write_status()

    writers = [threading.Thread(target=write) for _ in range(2)]
    for w in writers:
        w.start()
    bad = 0
    try:
        end = time.time() + 3
        while time.time() < end:
            try:
                doc = json.loads(path.read_text())
            except FileNotFoundError:
                continue
            except ValueError:
                bad += 1
                continue
            assert len(doc["rows"]) == 400
    finally:
        stop.set()
        for w in writers:
            w.join()
    assert bad == 0


def test_ramp_then_deep_with_the_duty_cycle(tmp_path):
    """(b) --starts-only evaluates only the templates' start points; a deeper search of the same
    job folder reuses their compiled blobs; --duty bounds the worker's busy share (its own
    accounting and its CPU time, against wall time) up to the last node, whose owed sleep the
    worker does not take (the online tuner pays it before its next search)."""
    x = torch.randn(96, 700)
    job = str(tmp_path / "job")
    r = kf.tune("aten::_softmax", (x, -1, False), iterations=50, insert=False, job_dir=job,
                _worker_args=["--starts-only", "--nice", "10", "--cores", "1"])
    with open(os.path.join(job, "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    with open(os.path.join(job, "result.json")) as f:
        assert json.load(f)["stop_reason"] == "start candidates evaluated"
    assert nodes and all(n["change"].startswith("start:") and "random" not in n["change"]
                         for n in nodes), [n["change"] for n in nodes]
    assert r["status"] in ("found", "no_faster_kernel", "no_correct_kernel")
    n_starts, duty = len(nodes), 0.25
    cpu0, t0 = _cpu_seconds(), time.monotonic()
    r2 = kf.tune("aten::_softmax", (x, -1, False), iterations=n_starts + 4, insert=False,
                 job_dir=job, _worker_args=["--duty", str(duty), "--nice", "10", "--cores", "1"])
    wall, cpu = time.monotonic() - t0, _cpu_seconds() - cpu0
    with open(os.path.join(job, "result.json")) as f:
        res = json.load(f)
    with open(os.path.join(job, "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    last = nodes[-1]["compile_s"] + nodes[-1]["eval_s"]
    busy = res["wall_s"] - res["slept_s"]
    print(f"\ndeep: {len(nodes)} nodes, worker wall {res['wall_s']:.1f} s, slept "
          f"{res['slept_s']:.1f} s, busy {busy:.1f} s (last node {last:.1f} s); CPU {cpu:.1f} s "
          f"of {wall:.1f} s")
    assert res["slept_s"] > 0
    assert busy - last <= duty * (res["wall_s"] - last) + 0.2, res
    assert cpu <= duty * wall + last + 0.5, (cpu, wall, last)
    assert abs(res["busy_s"] - busy) < 0.1, res  # on the host its compiles count: they use cores
    logs = [open(os.path.join(job, "candidates", f"{i}.log")).read()
            for i in range(r2["iterations"])]
    reused = sum("compiled by an earlier search" in t for t in logs)
    assert reused >= 1, logs


@pytest.mark.gpu
def test_the_duty_cycle_leaves_out_nvrtc_compiles(tmp_path):
    """On CUDA the duty counts the worker's evaluations, not its NVRTC compiles (the CPU only):
    busy_s is the wall time less sleeps and compiles, and the sleeps keep it within the duty."""
    x = torch.randn(96, 700, device="cuda")
    job, duty = str(tmp_path / "job"), 0.25
    kf.tune("aten::_softmax", (x, -1, False), iterations=8, insert=False, job_dir=job,
            stagnation=0, _worker_args=["--duty", str(duty)])
    with open(os.path.join(job, "result.json")) as f:
        res = json.load(f)
    with open(os.path.join(job, "tree.json")) as f:
        nodes = json.load(f)["nodes"]
    compiled = sum(n["compile_s"] for n in nodes)
    assert res["busy_s"] <= res["wall_s"] - res["slept_s"] - compiled + 0.05, (res, compiled)
    last = nodes[-1]["eval_s"]
    assert res["busy_s"] - last <= duty * (res["wall_s"] - last) + 0.2, res


def test_verdict_refuses_spread_timings_and_a_lost_win():
    ok, why = _confirm.verdict([0.5, 0.52, 0.49, 0.51, 0.5], 0.03, 0.25)
    assert ok, why
    ok, why = _confirm.verdict([0.4, 1.3, 0.5, 1.2, 0.45, 1.1, 0.6], 0.03, 0.25)
    assert not ok and "spread" in why, why
    ok, why = _confirm.verdict([0.99, 1.0, 0.98, 1.01, 0.99], 0.03, 0.25)
    assert not ok and "did not hold" in why, why
    assert not _confirm.verdict([], 0.03, 0.25)[0]


def test_confirmation_refuses_a_kernel_whose_win_disappears(tmp_path):
    """(c) a correct kernel that is much slower than eager (as a noisy search might have
    timed it faster) is refused by the confirmation child, with the reason."""
    staging = tmp_path / "staging"
    rows, cols = 64, 256
    code = (
        "import json, sys, torch, kernel_forge as kf\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'tests', 'python', 'fixtures')!r})\n"
        "from host_softmax import LAUNCH\n"
        f"x = torch.randn({rows}, {cols})\n"
        f"kf.add_kernel('aten::_softmax', (x, -1, False), {slow_softmax_source(rows, cols)!r}, "
        "LAUNCH, allow_slower=True)\n"
        "key = kf.signature_key('aten::_softmax', x, -1, False)\n"
        f"torch.save({{'op': 'aten::_softmax', 'args': [x, -1, False], 'kwargs': {{}}, "
        f"'margin': 0.03, 'max_spread': 0.25, 'rounds': 5}}, {str(tmp_path / 'confirm.pt')!r})\n"
        f"json.dump({{'key': key, 'eager_us': 20.0}}, open({str(tmp_path / 'job.json')!r}, 'w'))\n")
    p = run_python(code, {"KFORGE_CACHE_DIR": str(staging)}, timeout=200)
    assert p.returncode == 0, p.stderr[-3000:]
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_") or k == "KFORGE_INTERCEPT"}
    env.update(KFORGE_CACHE_DIR=str(staging), KFORGE_EAGER_SAMPLE_EVERY="0", PYTHONPATH=ROOT,
               OMP_NUM_THREADS="1")  # two intra-op threads on a shared 2-core box: contention
    c = subprocess.run([sys.executable, "-m", "kernel_forge._confirm", str(tmp_path)], env=env,
                       input="go\n", capture_output=True, text=True, timeout=200)
    out = json.loads(c.stdout.strip().splitlines()[-1])
    assert out["confirmed"] is False, out
    assert "did not hold" in out["reason"] or "spread" in out["reason"], out
    assert out["ratio"] > 1.5, out


def test_quiet_detection_sees_calls_flowing():
    with busy_softmax():
        assert _tuner.calls_flowing(0.05)
        assert _tuner.wait_quiet(0.2) is False
    assert _tuner.wait_quiet(1.0) is True


GPU_MODEL = r'''
import json, time, torch, kernel_forge as kf
# a BERT-sized layer norm: on the H200 the template beats eager by ~25% there, while eager's
# softmax of f32[4096,1024] is within 2% of the best kernel and rightly refused in place
x = torch.randn(8192, 768, device="cuda", dtype=torch.bfloat16)
w = torch.randn(768, device="cuda", dtype=torch.bfloat16)
b = torch.randn(768, device="cuda", dtype=torch.bfloat16)
t0, first = time.time(), None
while time.time() - t0 < 150 and first is None:
    for _ in range(20):
        torch.nn.functional.layer_norm(x, (768,), w, b)
    torch.cuda.synchronize()
    time.sleep(0.01)
    if any(r["served"] > 0 for r in kf.stats()):
        first = time.time() - t0
print("RESULT " + json.dumps({"first": first, "status": kf.tuner_status()}))
'''


@pytest.mark.gpu
def test_gpu_first_kernel_lands_from_the_ramp(tmp_path):
    """On CUDA: the ramp pass (the worker on a low-priority stream, duty 10%) lands a confirmed
    layer-norm kernel; the time after the signature became hot is printed."""
    p = run_python(GPU_MODEL, {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "KFORGE_TUNE": "1",
                               "KFORGE_TUNE_INTERVAL": "0.5", "KFORGE_RELOAD_MS": "100",
                               "KFORGE_LOG": "info"}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.split("RESULT ")[-1])
    landed = res["status"]["landed"]
    assert res["first"] is not None and landed, (res, p.stderr[-3000:])
    print(f"\nGPU: first kernel {landed[0]['after_hot_s']:.1f} s after hot ({landed[0]['pass']} "
          f"pass, confirmed at {landed[0]['confirmed_ratio']:.3f} of eager)")
    assert landed[0]["after_hot_s"] < 60


def test_the_worker_dies_with_its_parent(tmp_path):
    """A worker whose parent process dies is killed (PR_SET_PDEATHSIG): an online tuner's
    search never outlives the model's process, even when that process ends before the worker
    has set this up (--parent). Its duty of 1% would keep it asleep for many seconds after its
    first candidate otherwise."""
    x = torch.randn(64, 300)
    r = kf.tune("aten::_softmax", (x, -1, False), iterations=1, insert=False,
                job_dir=str(tmp_path / "job"))
    code = ("import os, subprocess, sys\n"
            "from kernel_forge import _jobs\n"
            "p = subprocess.Popen([_jobs.worker_path(), sys.argv[1], '--iterations', '1000', "
            "'--duty', '0.01', '--no-insert', '--parent', str(os.getpid())], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL)\n"
            "print(p.pid, flush=True)\n")
    q = subprocess.run([sys.executable, "-c", code, r["job_dir"]], capture_output=True,
                       text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    pid = int(q.stdout.split()[0])

    def alive():
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(), f"worker {pid} outlived its parent"
