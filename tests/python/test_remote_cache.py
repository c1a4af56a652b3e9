"""The fleet cache on a real redis-server (Debian's package; each test module starts its own on
127.0.0.1): publish and serve across processes, one search per signature, leases that expire,
bad values refused, Redis down. Every process is a fresh one (the plugin loads per process) with
its own, empty local cache folder."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, run_python

redis = pytest.importorskip("redis", reason="needs the redis package (pip install redis)")
pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None,
                                reason="needs redis-server (apt-get install redis-server)")

SHAPE = (352, 1408)  # big enough that a host kernel is neither flagged nor slower than eager

# A model's loop: softmax on SHAPE (and on `extra` shapes) until served or `secs` passed.
LOOP = r"""
import json, os, sys, time, torch, kernel_forge as kf
from kernel_forge import _remote, _tuner
secs, until_served = float(sys.argv[1]), sys.argv[2] == "1"
shapes = [tuple(json.loads(s)) for s in sys.argv[3:]] or [%r]
xs = [torch.randn(*s) for s in shapes]
for x in xs:
    torch.softmax(x, -1)
def served():
    return {r["signature"]: r["served"] for r in kf.stats() if r["op"] == "aten::_softmax"}
keys = {r["signature"]: _remote.cache_key_of(r["key"]) for r in kf.stats()
        if r["op"] == "aten::_softmax"}
print("KEYS " + json.dumps(keys), flush=True)
hook = os.environ.get("T_HOOK")
if hook:
    exec(open(hook).read())
t0 = time.time()
while time.time() - t0 < secs:
    for x in xs:
        y = torch.softmax(x, -1)
    time.sleep(0.002)
    if until_served and all(served().values()):
        break
from kernel_forge import _jobs
with _jobs.bypass():  # what was served equals eager (its own calls go to eager)
    for x in xs:
        assert torch.allclose(torch.softmax(x, -1), torch.exp(x) / torch.exp(x).sum(-1, keepdim=True), atol=1e-5)
res = _tuner._online.results if _tuner._online else []
print("RESULT " + json.dumps({"served": served(), "results": [r["status"] for r in res],
                              "wall_s": [r.get("wall_s", 0) for r in res]}), flush=True)
""" % (SHAPE,)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    d = tmp_path_factory.mktemp("redis")
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", str(d)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        p.kill()
        pytest.fail("redis-server did not start")
    yield {"url": f"redis://127.0.0.1:{port}/0", "client": client}
    p.terminate()
    p.wait(10)


def env_for(server, tmp_path, name, prefix, tune=False, **extra):
    e = {"KFORGE_CACHE_DIR": str(tmp_path / name), "KFORGE_REMOTE_CACHE": server["url"],
         "KFORGE_REMOTE_PREFIX": prefix, "KFORGE_REMOTE_POLL": "0.2", "KFORGE_RELOAD_MS": "100",
         "KFORGE_LOG": "info", "OMP_NUM_THREADS": "1"}
    if tune:
        # the whole machine for the worker (KFORGE_TUNE_DUTY=1): these test the fleet
        e.update({"KFORGE_TUNE": "1", "KFORGE_TUNE_ITERATIONS": "4", "KFORGE_TUNE_INTERVAL": "0.3",
                  "KFORGE_TUNE_MARGIN": "-100", "KFORGE_TUNE_DUTY": "1"})
    e.update({k: str(v) for k, v in extra.items()})
    return e


def loop_args(secs, until_served=True, shapes=()):
    return ["-c", LOOP, str(secs), "1" if until_served else "0", *[json.dumps(s) for s in shapes]]


def parse(p):
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.split("RESULT ")[-1])


def popen(env, args):
    full = dict(os.environ)
    for k in list(full):
        if k.startswith("KFORGE_") and k not in ("KFORGE_CACHE_DIR", "KFORGE_INTERCEPT"):
            del full[k]
    full.update(env)
    return subprocess.Popen([sys.executable, *args], env=full, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def jobs_in(*dirs):
    """Job folders (the online tuner's status file, tuner-PID.json, sits beside them)."""
    return sum(sum(os.path.isdir(os.path.join(d, "jobs", n)) for n in os.listdir(os.path.join(d, "jobs")))
               for d in dirs if os.path.isdir(os.path.join(d, "jobs")))


@pytest.fixture(scope="module")
def published(server, tmp_path_factory):
    """Process A tunes SHAPE's softmax online and publishes it (prefix "pub")."""
    tmp = tmp_path_factory.mktemp("pub")
    p = run_python(loop_args(240), env_for(server, tmp, "a", "pub", tune=True), timeout=300)
    out = parse(p)
    assert out["results"] == ["inserted"] and all(out["served"].values()), p.stderr
    keys = [k.decode() for k in server["client"].smembers("pub:v1:index")]
    assert len(keys) == 1, keys
    value = server["client"].get(f"pub:v1:entry:{keys[0]}")
    return {"key": keys[0], "value": value, "dir": str(tmp / "a"), "stderr": p.stderr}


def test_a_publishes_b_with_an_empty_cache_serves(server, published, tmp_path):
    assert "published " + published["key"] in published["stderr"]
    # B does not tune: only the background fetch can give it a kernel
    p = run_python(loop_args(60), env_for(server, tmp_path, "b", "pub"), timeout=120)
    out = parse(p)
    assert all(out["served"].values()), p.stderr
    assert out["results"] == [] and jobs_in(str(tmp_path / "b")) == 0
    assert os.path.exists(tmp_path / "b" / "entries" / (published["key"] + ".json"))
    origins = json.loads((tmp_path / "b" / "remote-origins.json").read_text())
    assert origins[published["key"]]["remote"] == server["url"]
    # the key B asked for is the one A published: same signature, arch, toolchain, versions
    assert json.loads(p.stdout.split("KEYS ")[1].splitlines()[0]) == {
        f"_softmax(f32[{SHAPE[0]},{SHAPE[1]}], dim=-1, half_to_float=False)": published["key"]}


def test_cli_ls_remote_push_pull(server, published, tmp_path):
    env = {"KFORGE_REMOTE_CACHE": server["url"], "KFORGE_REMOTE_PREFIX": "pub",
           "KFORGE_CACHE_DIR": str(tmp_path / "c")}
    p = run_python(["-m", "kernel_forge", "cache", "ls", "--remote", "--json"], env)
    assert p.returncode == 0, p.stderr
    (d,) = json.loads(p.stdout)
    assert d["key"] == published["key"] and d["op"] == "aten::_softmax" and d["present"]
    p = run_python(["-m", "kernel_forge", "cache", "pull", "--op", "_softmax"], env)
    assert p.returncode == 0 and "pulled 1 of 1" in p.stdout, p.stdout + p.stderr
    assert os.path.exists(tmp_path / "c" / "entries" / (published["key"] + ".json"))
    p = run_python(["-m", "kernel_forge", "cache", "pull", "--op", "relu"], env)
    assert "pulled 0 of 0" in p.stdout
    # push from A's folder into another namespace: the same bytes land there
    env.update(KFORGE_REMOTE_PREFIX="pushed", KFORGE_CACHE_DIR=published["dir"])
    p = run_python(["-m", "kernel_forge", "cache", "push"], env)
    assert p.returncode == 0 and "pushed 1 entries" in p.stdout, p.stdout + p.stderr
    assert server["client"].get(f"pushed:v1:entry:{published['key']}") == published["value"]


def test_two_processes_tune_one_signature_run_one_search(server, tmp_path):
    procs = [popen(env_for(server, tmp_path, n, "two", tune=True), loop_args(240)) for n in "ab"]
    outs = [p.communicate(timeout=300) for p in procs]
    res = [json.loads(o.split("RESULT ")[-1]) for o, _ in outs]
    assert all(all(r["served"].values()) for r in res), outs
    # one search in the fleet: one worker run, one job folder; the other process waited
    assert sorted(s for r in res for s in r["results"]) == ["inserted"], outs
    assert jobs_in(str(tmp_path / "a"), str(tmp_path / "b")) == 1
    assert any("is being tuned by" in e for _, e in outs), outs


def test_a_killed_tuners_lease_expires_and_another_takes_over(server, tmp_path):
    lease_ms = 4000
    # A searches long, holding the lease; it is killed (with its worker) mid-search
    a = popen(env_for(server, tmp_path, "a", "kill", tune=True, KFORGE_TUNE_ITERATIONS=100000,
                      KFORGE_REMOTE_LEASE_MS=lease_ms), loop_args(240))
    client, t0 = server["client"], time.time()
    while not client.keys("kill:v1:lease:*") and time.time() - t0 < 120 and a.poll() is None:
        time.sleep(0.1)
    (lease,) = client.keys("kill:v1:lease:*")
    time.sleep(lease_ms * 1.5 / 1000)  # renewed while A runs
    assert client.exists(lease)
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    assert client.exists(lease)  # nobody released it: only its expiry frees the signature
    b = run_python(loop_args(240), env_for(server, tmp_path, "b", "kill", tune=True,
                                           KFORGE_REMOTE_LEASE_MS=lease_ms), timeout=300)
    out = parse(b)
    assert out["results"] == ["inserted"] and all(out["served"].values()), b.stderr
    assert client.smembers("kill:v1:index") == {lease.decode().split(":")[-1].encode()}
    assert not client.exists(lease)  # B released its own lease after publishing


HOOK_BAD = r"""
import redis as _r
c = _r.Redis.from_url(os.environ["KFORGE_REMOTE_CACHE"])
good = open(os.environ["T_GOOD"], "rb").read()
bad = [b"not a bundle at all", good[: len(good) // 2],  # garbage, truncated
       good[:8] + (2).to_bytes(4, "little") + good[12:],  # a bundle format from another version
       good,  # a valid entry, but another signature's (another environment's) under this key
       good[:-1] + bytes([good[-1] ^ 1])]  # this key's entry with one bit of its blob flipped
sig = lambda s: f"_softmax(f32[{s[0]},{s[1]}], dim=-1, half_to_float=False)"
for k, v in zip([keys[sig(s)] for s in shapes], bad):
    c.set("bad:v1:entry:" + k, v)
print("SET", flush=True)
"""


def test_corrupt_truncated_foreign_values_are_refused_once(server, published, tmp_path):
    good = tmp_path / "good.bin"
    good.write_bytes(published["value"])
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK_BAD)
    shapes = [(8, 32), (8, 48), (8, 64), (8, 80), SHAPE]
    p = run_python(loop_args(4, until_served=False, shapes=shapes),
                   env_for(server, tmp_path, "b", "bad", T_GOOD=good, T_HOOK=hook), timeout=120)
    out = parse(p)
    keys = json.loads(p.stdout.split("KEYS ")[1].splitlines()[0])
    assert not any(out["served"].values())
    # about 20 looks at each key in 4 s: one warning each, nothing installed
    keys = [keys[f"_softmax(f32[{a},{b}], dim=-1, half_to_float=False)"] for a, b in shapes]
    for why, k in zip(["no KFBUNDLE header", "truncated", "unsupported bundle format 2",
                       "not this key's entry", "checksum mismatch"], keys):
        lines = [ln for ln in p.stderr.splitlines() if "refused" in ln and k in ln]
        assert len(lines) == 1 and why in lines[0], (why, p.stderr)
        print(lines[0])
    entries = tmp_path / "b" / "entries"
    assert not entries.exists() or not os.listdir(entries)


HOOK_TIME = r"""
import statistics
def per_call_us():
    x = torch.randn(8, 16)
    best = []
    for _ in range(15):
        t = time.perf_counter()
        for _ in range(300):
            torch.softmax(x, -1)
        best.append((time.perf_counter() - t) / 300 * 1e6)
    return min(best)
worst = 0.0
t_end = time.time() + 3
while time.time() < t_end:  # the fetcher tries (and fails) meanwhile
    t = time.perf_counter(); torch.softmax(xs[0], -1); worst = max(worst, time.perf_counter() - t)
print("TIMING " + json.dumps({"per_call_us": per_call_us(), "worst_call_s": worst}), flush=True)
"""


def blackhole():
    """A server that accepts and never answers: every request waits for its timeout."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    held = []
    threading.Thread(target=lambda: [held.append(s.accept()) for _ in iter(int, 1)],
                     daemon=True).start()
    return s


def test_redis_down_runs_on_eager_at_full_speed_with_one_warning(tmp_path):
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK_TIME)
    hole = blackhole()
    urls = {"none": None, "refused": f"redis://127.0.0.1:{free_port()}/0",
            "silent": f"redis://127.0.0.1:{hole.getsockname()[1]}/0"}
    runs = {}
    for name, url in urls.items():
        env = {"KFORGE_CACHE_DIR": str(tmp_path / name), "KFORGE_LOG": "info", "T_HOOK": str(hook),
               "KFORGE_REMOTE_POLL": "0.1", "KFORGE_REMOTE_TIMEOUT": "1", "OMP_NUM_THREADS": "1"}
        if url:
            env["KFORGE_REMOTE_CACHE"] = url
        p = run_python(loop_args(0, until_served=False), env, timeout=120)
        parse(p)
        runs[name] = (json.loads(p.stdout.split("TIMING ")[1].splitlines()[0]), p.stderr)
    for name in ("refused", "silent"):
        timing, err = runs[name]
        assert sum("unreachable" in ln for ln in err.splitlines()) == 1, err
        assert "ConnectionError" in err if name == "refused" else "TimeoutError" in err, err
        # no call waited for the network (a silent server holds each request for 1 s)
        assert timing["worst_call_s"] < 0.5, timing
        # and the per-call cost is eager's: same as with no fleet cache configured
        assert timing["per_call_us"] < 1.5 * runs["none"][0]["per_call_us"] + 10, (name, runs)
    hole.close()


def test_a_search_without_a_winner_is_not_repeated_by_the_fleet(server, tmp_path):
    # no kernel is 100x faster than eager (and over 10x is flagged): A's search finds no winner and says so
    a = run_python(loop_args(15), env_for(server, tmp_path, "a", "none", tune=True,
                                          KFORGE_TUNE_MARGIN=0.99), timeout=120)
    out = parse(a)
    assert out["results"] == ["no_faster_kernel"], a.stderr
    (mark,) = server["client"].keys("none:v1:none:*")
    b = run_python(loop_args(8, until_served=False), env_for(server, tmp_path, "b", "none",
                                                             tune=True, KFORGE_TUNE_MARGIN=0.99),
                   timeout=120)
    out = parse(b)
    assert out["results"] == [] and jobs_in(str(tmp_path / "b")) == 0, b.stderr
    assert "not searched: no_faster_kernel" in b.stderr


def test_ui_cache_view_says_where_an_entry_came_from(server, published, tmp_path):
    from kernel_forge.ui.server import Cache

    d = tmp_path / "c"
    env = {"KFORGE_REMOTE_CACHE": server["url"], "KFORGE_REMOTE_PREFIX": "pub",
           "KFORGE_CACHE_DIR": str(d)}
    p = run_python(["-m", "kernel_forge", "cache", "pull"], env)
    assert p.returncode == 0, p.stderr
    (e,) = Cache(str(d)).entries()
    assert e["key"] == published["key"] and e["origin"] == "fleet"
    assert server["url"] in e["origin_detail"] and "published by" in e["origin_detail"]
    (a,) = Cache(published["dir"]).entries()
    assert a["origin"] == "local"
    # the origins file is untrusted input: junk in it is dropped or cut short, never trusted
    junk = {"../../etc": {"remote": "x"}, published["key"]: {"remote": "<b>" * 1000, "pulled": "no"},
            "f" * 32: "not a record"}
    (d / "remote-origins.json").write_text(json.dumps(junk))
    (e,) = Cache(str(d)).entries()
    assert e["origin"] == "fleet" and len(e["origin_detail"]) < 300
    (d / "remote-origins.json").write_text("[1, 2")
    assert Cache(str(d)).entries()[0]["origin"] == "local"


def test_password_file_is_used_and_never_printed(tmp_path):
    port, secret = free_port(), "s3cret-pw-" + os.urandom(4).hex()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save",
                            "", "--appendonly", "no", "--requirepass", secret, "--dir",
                            str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = redis.Redis(host="127.0.0.1", port=port, password=secret)
        for _ in range(100):
            try:
                c.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        pw = tmp_path / "pw"
        env = {"KFORGE_REMOTE_CACHE": f"redis://127.0.0.1:{port}/0",
               "KFORGE_CACHE_DIR": str(tmp_path / "c")}
        p = run_python(["-m", "kernel_forge", "cache", "ls", "--remote"], env)
        assert p.returncode != 0 and secret not in p.stdout + p.stderr
        pw.write_text(secret + "\n")
        p = run_python(["-m", "kernel_forge", "cache", "ls", "--remote"],
                       dict(env, KFORGE_REMOTE_CACHE_PASSWORD_FILE=str(pw)))
        assert p.returncode == 0 and "0 entries in redis://127.0.0.1" in p.stdout, p.stderr
        pw.write_text("wrong\n")
        p = run_python(["-m", "kernel_forge", "cache", "ls", "--remote"],
                       dict(env, KFORGE_REMOTE_CACHE_PASSWORD_FILE=str(pw)))
        assert p.returncode != 0 and "wrong" not in p.stdout + p.stderr
    finally:
        srv.terminate()
        srv.wait(10)


WARM_SCRIPT = """
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)
m, x = M(), torch.randn(%d, %d)
for _ in range(30):
    m(x)
""" % SHAPE


def test_warmup_takes_the_fleets_entry_instead_of_searching(server, tmp_path):
    script = tmp_path / "model.py"
    script.write_text(WARM_SCRIPT)
    runs = {}
    for name in ("a", "b"):
        env = env_for(server, tmp_path, name, "warm")
        out = tmp_path / f"{name}.json"
        # any verified kernel is inserted: A's search must publish one whatever this box's load
        p = run_python(["-m", "kernel_forge", "warmup", "--no-check", "--iterations", "4", "--ops", "_softmax",
                        "--margin", "-100", "--json", str(out), str(script)], env, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        runs[name] = json.loads(out.read_text())["rows"]
    (a,) = runs["a"]
    assert a["status"] == "inserted" and a["iterations"] > 0, a
    # B found A's published entry before its own search (or its recording run was already
    # served it, so nothing was hot): no worker ran, and the entry is in B's cache now
    assert all(b["status"] == "from the fleet cache" and b["iterations"] == 0
               and not (b["job_dir"] and os.path.exists(os.path.join(b["job_dir"], "result.json")))
               for b in runs["b"]), runs["b"]
    keys = [k.decode().split(":")[-1] for k in server["client"].smembers("warm:v1:index")]
    assert len(keys) == 1 and os.path.exists(tmp_path / "b" / "entries" / (keys[0] + ".json"))


def test_two_warmups_at_once_run_one_search(server, tmp_path):
    script = tmp_path / "model.py"
    script.write_text(WARM_SCRIPT)
    procs = [popen(env_for(server, tmp_path, n, "warm2"),
                   ["-m", "kernel_forge", "warmup", "--no-check", "--iterations", "30", "--ops", "_softmax",
                    "--margin", "-100", "--json", str(tmp_path / f"{n}.json"), str(script)])
             for n in "ab"]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    rows = [r for n in "ab" for r in json.loads((tmp_path / f"{n}.json").read_text())["rows"]]
    # one of them searched; the other waited for its entry (or was served it while recording)
    assert [r["status"] for r in rows].count("inserted") == 1, rows
    assert all(r["status"] in ("inserted", "from the fleet cache") for r in rows), rows
    assert sum(r["iterations"] > 0 for r in rows) == 1
    for n in "ab":
        assert len(os.listdir(tmp_path / n / "entries")) == 2  # manifest + blob
