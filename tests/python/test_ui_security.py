"""`kforge ui` against DNS rebinding and links out of the jobs folder.

DNS rebinding: a page of attacker.example whose name is rebound to 127.0.0.1 talks to the UI as
its own origin, sending Host and Origin `attacker.example:PORT`. Such requests must be refused
(GET and POST), and an action needs the server's token, which only the page it serves carries.
Job files: job.json, result.json, tree.json and progress.jsonl that are links out of the job's
folder are refused like the candidates' files. The cache holds one real add_kernel entry."""

import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, run_python
from kernel_forge.ui import make_server

MAKE = r"""
import json, sys, torch, kernel_forge as kf
sys.path.insert(0, "tests/python")
from fixtures.host_softmax import LAUNCH, softmax_source
y = torch.randn(31, 87)
added = kf.add_kernel("aten::_softmax", (y, -1, False), softmax_source(31, 87), LAUNCH,
                     allow_slower=True)
print("KFSEC " + json.dumps({"key": added["cache_key"]}))
"""
SECRET = "secret-outside-the-jobs-folder"
JOB_FILES = ("job.json", "result.json", "tree.json", "progress.jsonl")


def write_job(d, *, linked=None, target=None):
    """A small finished job folder; `linked` (one of JOB_FILES) is a symlink to `target`."""
    os.makedirs(os.path.join(d, "candidates"))
    files = {
        "job.json": json.dumps({"op": "aten::_softmax", "signature": "_softmax(sec)", "eager_us": 10}),
        "result.json": json.dumps({"status": "no_faster_kernel", "best_us": 12, "iterations": 1}),
        "tree.json": json.dumps({"op": "aten::_softmax", "nodes": [
            {"id": 0, "parent": -1, "status": "slower", "latency_us": 12, "change": "root"}]}),
        "progress.jsonl": json.dumps({"event": "node", "node": 0, "status": "slower"}) + "\n",
    }
    for name, text in files.items():
        path = os.path.join(d, name)
        if name == linked:
            os.symlink(target, path)
        else:
            with open(path, "w") as f:
                f.write(text)
    with open(os.path.join(d, "candidates", "0.c"), "w") as f:
        f.write("void kf_kernel(void) {}\n")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("uisec")
    cache = str(base / "cache")
    os.makedirs(cache)
    p = run_python(MAKE, {"KFORGE_CACHE_DIR": cache}, timeout=300)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("KFSEC ")), None)
    assert line, p.stdout + p.stderr
    key = json.loads(line[6:])["key"]
    jobs = str(base / "jobs")
    outside = str(base / "outside")
    os.makedirs(outside)
    # JSON any reader would take: a job, a result, a tree with a node, a progress line
    with open(os.path.join(outside, "doc.json"), "w") as f:
        json.dump({"op": SECRET, "signature": SECRET, "status": SECRET, "nodes": [
            {"id": 0, "parent": -1, "status": SECRET, "change": SECRET}]}, f)
    with open(os.path.join(outside, "progress.jsonl"), "w") as f:
        f.write(json.dumps({"event": SECRET}) + "\n")
    write_job(os.path.join(jobs, "plain"))
    for name in JOB_FILES:
        target = os.path.join(outside, "progress.jsonl" if name == "progress.jsonl" else "doc.json")
        write_job(os.path.join(jobs, "link-" + name.split(".")[0]), linked=name, target=target)
    srv = make_server("127.0.0.1", 0, cache, jobs)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    port = srv.server_address[1]
    yield {"cache": cache, "jobs": jobs, "key": key, "port": port, "token": getattr(srv, "token", "-"),
           "netloc": f"127.0.0.1:{port}"}
    srv.shutdown()
    srv.server_close()


def request(env, method, path, headers=None, skip_host=False):
    """(status, body) of a raw request: Host is whatever `headers` says (http.client's own
    otherwise), exactly as a rebound page's browser would send it."""
    conn = http.client.HTTPConnection(env["netloc"], timeout=30)
    headers = dict(headers or {})
    conn.putrequest(method, path, skip_host="Host" in headers or skip_host)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def entry(env):
    status, body = request(env, "GET", "/api/cache")
    assert status == 200, body
    return next(e for e in json.loads(body)["entries"] if e["key"] == env["key"])


# ---------------------------------------------------------------- DNS rebinding

@pytest.mark.parametrize("path", ["/", "/app.js", "/api/jobs", "/api/cache", "/api/overview",
                                  "/api/job/plain"])
def test_get_with_a_foreign_host_is_refused(env, path):
    for host in (f"attacker.example:{env['port']}", "attacker.example", "127.0.0.1.attacker.example",
                 "localhost.attacker.example:1", "evil@127.0.0.1", ""):
        status, body = request(env, "GET", path, {"Host": host})
        assert status == 403, (host, path, status, body[:200])
        assert env["token"].encode() not in body
        assert env["key"].encode() not in body


def test_get_without_host_is_refused(env):
    status, _ = request(env, "GET", "/api/jobs", skip_host=True)
    assert status == 403


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}",
                                  "[::1]:{port}", "127.0.0.1", "localhost:9000"])
def test_get_with_a_bound_name_is_served(env, host):
    # another port is fine: an ssh tunnel's local port is not the server's
    status, body = request(env, "GET", "/api/jobs", {"Host": host.format(port=env["port"])})
    assert status == 200, body[:200]
    assert "plain" in {j["id"] for j in json.loads(body)}


def test_rebound_post_cannot_disable_an_entry(env):
    """The reported attack: Host and Origin attacker.example:PORT; with and without the token
    (which a rebound page cannot read, but even then the Host is refused)."""
    evil = f"attacker.example:{env['port']}"
    for tok in ("", "x" * 43, env["token"]):
        hdr = {"Host": evil, "Origin": "http://" + evil, "X-KForge-UI": "1"}
        if tok:
            hdr["X-KForge-Token"] = tok
        for action in ("disable", "delete"):
            status, body = request(env, "POST", f"/api/cache/{env['key']}/{action}", hdr)
            assert status == 403, (tok, action, status, body)
        status, _ = request(env, "POST", "/api/cache/export", hdr)
        assert status == 403
    assert not entry(env)["disabled"]


def test_post_needs_the_token(env):
    path = f"/api/cache/{env['key']}/disable"
    # the old header alone, a wrong token, a prefix of the right one, an empty one
    for hdr in ({}, {"X-KForge-UI": "1"}, {"X-KForge-Token": "x" * len(env["token"])},
                {"X-KForge-Token": env["token"][:-1]}, {"X-KForge-Token": ""}):
        status, body = request(env, "POST", path, hdr)
        assert status == 403, (hdr, status, body)
        assert b"X-KForge-Token" in body
    assert not entry(env)["disabled"]
    # a page of another origin, even with the token, is refused
    for origin in ("http://attacker.example", f"http://attacker.example:{env['port']}", "null",
                   f"https://127.0.0.1:{env['port']}"):
        status, _ = request(env, "POST", path, {"X-KForge-Token": env["token"], "Origin": origin})
        assert status == 403, origin
    assert not entry(env)["disabled"]


def test_post_with_the_token_works(env):
    tok = {"X-KForge-Token": env["token"], "Origin": f"http://{env['netloc']}"}
    status, body = request(env, "POST", f"/api/cache/{env['key']}/disable", tok)
    assert status == 200, body
    assert entry(env)["disabled"]
    status, body = request(env, "POST", f"/api/cache/{env['key']}/enable",
                           {"X-KForge-Token": env["token"], "Host": f"localhost:{env['port']}"})
    assert status == 200, body
    assert not entry(env)["disabled"]


def test_the_page_carries_the_token_and_the_script_sends_it(env):
    status, body = request(env, "GET", "/")
    assert status == 200
    m = re.search(rb'<meta name="kforge-token" content="([^"]*)">', body)
    assert m and m.group(1).decode() == env["token"] and len(env["token"]) >= 32
    status, js = request(env, "GET", "/app.js")
    assert b'"X-KForge-Token": UI_TOKEN' in js and b'meta[name="kforge-token"]' in js


def test_each_server_has_its_own_token(env):
    a = make_server("127.0.0.1", 0, env["cache"], env["jobs"])
    b = make_server("127.0.0.1", 0, env["cache"], env["jobs"])
    try:
        assert a.token != b.token and len(a.token) >= 32
    finally:
        a.server_close()
        b.server_close()
    with pytest.raises(ValueError):
        make_server("127.0.0.1", 0, env["cache"], env["jobs"], token="short").server_close()


def test_wildcard_bind_takes_ip_literals_and_allowed_names_only(env):
    srv = make_server("0.0.0.0", 0, env["cache"], env["jobs"], allow_hosts=["Box.Lan"])
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    e = dict(env, netloc=f"127.0.0.1:{srv.server_address[1]}")
    try:
        for host, want in (("10.1.2.3:8765", 200), ("0.0.0.0:1", 200), ("box.lan:8765", 200),
                           ("[fe80::1]:1", 200), ("attacker.example:8765", 403), ("lan:1", 403)):
            assert request(e, "GET", "/api/jobs", {"Host": host})[0] == want, host
    finally:
        srv.shutdown()
        srv.server_close()


def test_cli_allow_host_and_token_from_the_environment(env):
    token = "t" * 20 + "-fixed-token"
    envp = dict(os.environ, KFORGE_UI_TOKEN=token)
    p = subprocess.Popen([sys.executable, "-m", "kernel_forge.cli", "ui", "--port", "0",
                          "--allow-host", "forge.internal", "--cache", env["cache"], "--jobs",
                          env["jobs"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT, env=envp)
    try:
        line = p.stdout.readline()
        assert line.startswith("kforge ui: http://127.0.0.1:"), line
        e = dict(env, netloc="127.0.0.1:" + line.split(":")[3].split("/")[0])
        assert request(e, "GET", "/api/jobs", {"Host": "forge.internal:1"})[0] == 200
        assert request(e, "GET", "/api/jobs", {"Host": "attacker.example:1"})[0] == 403
        assert token.encode() in request(e, "GET", "/")[1]
        status, _ = request(e, "POST", "/api/cache/export", {"X-KForge-Token": token})
        assert status == 200
    finally:
        p.terminate()
        p.communicate(timeout=30)
    bad = subprocess.run([sys.executable, "-m", "kernel_forge.cli", "ui", "--port", "0", "--cache",
                          env["cache"]], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env=dict(os.environ, KFORGE_UI_TOKEN="short"))
    assert bad.returncode == 2 and "KFORGE_UI_TOKEN" in bad.stderr


# ---------------------------------------------------------------- links out of a job folder

def test_a_plain_job_is_served(env):
    status, body = request(env, "GET", "/api/job/plain")
    assert status == 200 and json.loads(body)["nodes"]
    assert request(env, "GET", "/api/job/plain/live")[0] == 200
    assert request(env, "GET", "/api/job/plain/candidate/0")[0] == 200


@pytest.mark.parametrize("name", JOB_FILES)
def test_job_files_linking_out_are_refused(env, name):
    job_id = "link-" + name.split(".")[0]
    assert os.path.islink(os.path.join(env["jobs"], job_id, name))
    # the job is refused as a whole, whichever of its files links out
    for view in ("", "/live", "/candidate/0"):
        status, body = request(env, "GET", f"/api/job/{job_id}{view}")
        assert status == 403, (view, status, body[:200])
        assert SECRET.encode() not in body
    for path in ("/api/jobs", "/api/overview"):
        status, body = request(env, "GET", path)
        assert status == 200 and SECRET.encode() not in body, body[:300]
    status, body = request(env, "GET", "/api/jobs")
    assert job_id not in {j["id"] for j in json.loads(body)}


def test_a_fifo_in_a_job_folder_does_not_hang_the_server(env, tmp_path):
    d = os.path.join(env["jobs"], "fifo")
    write_job(d)
    os.unlink(os.path.join(d, "result.json"))
    os.mkfifo(os.path.join(d, "result.json"))
    try:
        t0 = time.monotonic()
        status, body = request(env, "GET", "/api/job/fifo")
        assert status == 200 and json.loads(body)["result"] is None
        assert time.monotonic() - t0 < 10
    finally:
        os.unlink(os.path.join(d, "result.json"))
