"""A process that holds the cache folder's lock (here: stopped with SIGSTOP right after writing an
entry under it, like a `kforge cache import` stopped mid-way) never stalls the user's calls in
another process: they keep returning promptly, and the new entry is served once the lock is
released."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, run_python

# Records softmax(11, 29) calls (so its signature and output layout are known), then reports
# each call's duration until the call is served from the cache.
WATCH = r"""
import json, sys, time, torch, kernel_forge as kf
torch.set_num_threads(1)
x = torch.randn(11, 29)
for _ in range(50):
    torch.softmax(x, -1)
print("READY", flush=True)
worst, calls, t_end = 0.0, 0, time.time() + 90
served_at = None
while time.time() < t_end:
    t0 = time.perf_counter()
    torch.softmax(x, -1)
    worst = max(worst, time.perf_counter() - t0)
    calls += 1
    if calls % 50 == 0 and any(r["served"] for r in kf.stats() if r["op"] == "aten::_softmax"):
        served_at = time.time()
        break
    time.sleep(0.001)
print(json.dumps({"worst_call_s": worst, "calls": calls, "served_at": served_at}), flush=True)
"""

# Takes the folder's lock as a writer does, installs the staged entry's files and bumps the
# generation under it, then stops itself with the lock held; once continued, it exits.
HOLD = r"""
import fcntl, os, shutil, signal, sys, time
src, dst = sys.argv[1], sys.argv[2]
fd = os.open(os.path.join(dst, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
names = sorted(os.listdir(os.path.join(src, "entries")), key=lambda n: not n.endswith(".blob"))
for name in names:  # blob first, manifest last, as the store writes them
    shutil.copy(os.path.join(src, "entries", name), os.path.join(dst, "entries", name))
path = os.path.join(dst, "generation")
gen = int(open(path).read()) if os.path.exists(path) else 0
with open(path + ".tmp", "w") as f:
    f.write(f"{gen + 1}\n")
os.rename(path + ".tmp", path)
print("LOCKED", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
print(time.time(), flush=True)  # released when this process exits
"""

INSERT = ("import sys, torch, kernel_forge as kf\nsys.path.insert(0, 'tests/python')\n"
          "from fixtures.host_softmax import LAUNCH, softmax_source\n"
          "kf.add_kernel('aten::_softmax', (torch.randn(11, 29), -1, False), "
          "softmax_source(11, 29), LAUNCH, allow_slower=True)\n")


def test_a_held_cache_lock_never_stalls_the_calls(tmp_path):
    staged, live = str(tmp_path / "staged"), str(tmp_path / "live")
    p = run_python(INSERT, {"KFORGE_CACHE_DIR": staged})
    assert p.returncode == 0, p.stderr
    os.makedirs(os.path.join(live, "entries"), mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_") or k == "KFORGE_INTERCEPT"}
    env.update(KFORGE_CACHE_DIR=live, KFORGE_RELOAD_MS="50")
    watcher = subprocess.Popen([sys.executable, "-c", WATCH], env=env, cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    holder = None
    try:
        assert watcher.stdout.readline().strip() == "READY"
        holder = subprocess.Popen([sys.executable, "-c", HOLD, staged, live], env=env, cwd=ROOT,
                                  text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert holder.stdout.readline().strip() == "LOCKED"
        time.sleep(3.0)  # the watcher's reloads see the new generation but find the lock held
        assert watcher.poll() is None, "served while the lock was held?"
        released_at = time.time()
        holder.send_signal(signal.SIGCONT)
        holder.wait(timeout=30)
        out, err = watcher.communicate(timeout=120)
    finally:
        for proc in (holder, watcher):
            if proc and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
    res = json.loads(out.strip().splitlines()[-1])
    print(res)
    assert res["served_at"] is not None, err  # picked up once the lock was released
    assert res["served_at"] >= released_at - 0.5
    assert res["served_at"] - released_at < 30
    assert res["worst_call_s"] < 0.05, res  # no call waited for the lock


# CUDA: the nvrtc entry is already in the folder, but the lock is held from before the process
# starts, so neither the load at import nor the CUDA calls' attach can read it until it is free.
HOLD_ONLY = r"""
import fcntl, os, signal, sys
fd = os.open(os.path.join(sys.argv[1], "lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("LOCKED", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""

WATCH_CUDA = r"""
import json, os, sys, time, torch, kernel_forge as kf
flag = sys.argv[1]
x = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
for _ in range(20):  # CUDA context, lazy loading: not the plugin's
    torch.softmax(x, -1)
torch.cuda.synchronize()
print("READY", flush=True)
worst_locked, t_end, served_at = 0.0, time.time() + 120, None
while time.time() < t_end:
    released = os.path.exists(flag)
    t0 = time.perf_counter()
    torch.softmax(x, -1)
    torch.cuda.synchronize()
    if not released:
        worst_locked = max(worst_locked, time.perf_counter() - t0)
    if any(r["served"] for r in kf.stats() if r["op"] == "aten::_softmax"):
        served_at = time.time()
        break
    time.sleep(0.002)
print(json.dumps({"worst_locked_s": worst_locked, "served_at": served_at}), flush=True)
"""

INSERT_CUDA = (
    "import os, torch, kernel_forge as kf\n"
    "src = open(os.path.join('tests', 'fixtures', 'cuda', 'softmax_bf16_rows.cu')).read()\n"
    "src = '#define KF_ROWS 64\\n#define KF_COLS 1024\\n' + src\n"
    "x = torch.randn(64, 1024, device='cuda', dtype=torch.bfloat16)\n"
    "kf.add_kernel('aten::_softmax', (x, -1, False), src, {'entry': 'kf_kernel', "
    "'grid': [64, 1, 1], 'block': [1024, 1, 1], 'smem': 0, "
    "'args': ['const __nv_bfloat16*', '__nv_bfloat16*']}, allow_slower=True)\n")


@pytest.mark.gpu
def test_a_held_cache_lock_never_stalls_cuda_calls(tmp_path):
    d = str(tmp_path / "cache")
    p = run_python(INSERT_CUDA, {"KFORGE_CACHE_DIR": d})
    assert p.returncode == 0, p.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_") or k == "KFORGE_INTERCEPT"}
    env.update(KFORGE_CACHE_DIR=d, KFORGE_RELOAD_MS="50")
    flag = str(tmp_path / "released")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_ONLY, d], env=env, cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watcher = None
    try:
        assert holder.stdout.readline().strip() == "LOCKED"
        watcher = subprocess.Popen([sys.executable, "-c", WATCH_CUDA, flag], env=env, cwd=ROOT,
                                   text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert watcher.stdout.readline().strip() == "READY"
        time.sleep(2.0)
        assert watcher.poll() is None, "served while the lock was held?"
        open(flag, "w").close()
        released_at = time.time()
        holder.send_signal(signal.SIGCONT)
        holder.wait(timeout=30)
        out, err = watcher.communicate(timeout=180)
    finally:
        for proc in (holder, watcher):
            if proc and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
    res = json.loads(out.strip().splitlines()[-1])
    assert res["served_at"] is not None, err
    assert res["served_at"] >= released_at - 0.5
    assert res["worst_locked_s"] < 0.05, res
