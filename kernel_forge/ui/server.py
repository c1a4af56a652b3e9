"""`kforge ui`: a local web app over the job folders and the kernel cache.

The server is the standard library's ThreadingHTTPServer. It serves the three static files of this
package and a small JSON API; it reads only the configured jobs folder, the cache folder (through
the same kf_cache_dir_* functions as `kforge cache`) and an optional run file (`kforge warmup
--json` or `kforge run --json`). Everything read from a job folder is untrusted: names are
validated before they become paths, every path is resolved and must stay inside its folder, JSON
is written with <, > and & escaped, and the page builds its DOM with textContent under a strict
Content-Security-Policy.

DNS rebinding: a page of another site whose name is rebound to 127.0.0.1 reaches this server as
its own origin, so the Origin header proves nothing, and the Host header is that site's name. Every
request's Host must therefore be one of the names the server is bound to (127.0.0.1, localhost,
::1, --host, --allow-host; any IP literal when bound to a wildcard address: a rebound page never
sends one), and an action (POST) must carry the per-server token that only our page (served
under an allowed Host, unreadable cross-origin) holds.
"""

from __future__ import annotations

import ctypes
import difflib
import hmac
import ipaddress
import json
import os
import re
import secrets
import stat
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/style.css": ("style.css", "text/css; charset=utf-8")}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
JOB_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}$")
CACHE_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
MAX_TEXT = 4 << 20  # a source, log or launch record larger than this is cut
JOB_FILES = ("job.json", "result.json", "tree.json", "progress.jsonl")  # read by name from a job folder
TUNER_FILE = re.compile(r"^tuner-[0-9]{1,10}\.json$")  # the online tuner's status (_tuner.py)
LIVE_WINDOW_S = 120  # a job without result.json whose progress moved this recently is running
TOKEN = re.compile(r"^[A-Za-z0-9_.~-]{16,200}$")
TOKEN_HEADER = "X-KForge-Token"
TOKEN_SLOT = b'content="KFORGE_TOKEN"'  # index.html's <meta name="kforge-token">
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("", "0.0.0.0", "::")


class Refused(Exception):
    """A request for something outside the configured folders (403) or absent (404)."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def dumps(obj) -> bytes:
    """JSON that stays inert even if something sniffs it as HTML."""
    text = json.dumps(obj, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def _finite(v):
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    return v


def _clean(obj):
    """Replace NaN/inf (which some writers emit) by null, recursively."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return _finite(obj)


def inside(root: str, *parts: str) -> str:
    """The real path of root/parts, refused unless it stays inside root (symlinks resolved)."""
    for p in parts:
        if not p or p in (".", "..") or "/" in p or "\\" in p or "\0" in p:
            raise Refused(403, f"refused path component {p!r}")
    real_root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(real_root, *parts))
    if path != real_root and not path.startswith(real_root + os.sep):
        raise Refused(403, "refused: outside the served folders")
    return path


def open_regular(path: str):
    """A binary file object for path: not through a link swapped in after inside() resolved it,
    never blocking on a FIFO, and only a regular file (OSError otherwise)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: str, limit: int = MAX_TEXT):
    try:
        with open_regular(path) as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"(could not read: {e.strerror})"
    text = data[:limit].decode("utf-8", "replace")
    return text + "\n… (cut)" if len(data) > limit else text


def read_json(path: str):
    text = read_text(path, 256 << 20)
    if text is None:
        return None
    try:
        return _clean(json.loads(text))
    except ValueError:
        return None


def read_progress(path: str, since: int = 0):
    """Lines of progress.jsonl from line `since` on (a half-written last line is left for later)."""
    out = []
    try:
        with open_regular(path) as f:
            for i, line in enumerate(f):
                if i < since or not line.endswith(b"\n"):
                    continue
                try:
                    out.append(_clean(json.loads(line)))
                except ValueError:
                    out.append({"event": "unreadable"})
    except FileNotFoundError:
        pass
    except OSError:
        out.append({"event": "unreadable"})
    return out


class Cache:
    """The cache folder, through the plugin's kf_cache_dir_* functions (as `kforge cache`)."""

    def __init__(self, cache_dir: str):
        self.dir = cache_dir
        self.lock = threading.Lock()

    def _lib(self):
        from .. import _native
        return _native, _native.lib()

    def _call(self, fn, *args):
        err = ctypes.create_string_buffer(1024)
        code = fn(*args, err, len(err))
        if code:
            from .. import _native
            raise Refused(400, err.value.decode("utf-8", "replace") or _native.status_str(code))

    def entries(self):
        if not os.path.isdir(self.dir):
            return []
        native, lib = self._lib()
        from .. import _remote

        with self.lock:
            out = _clean(native.take_json(lib.kf_cache_dir_ls_json(self.dir.encode())))
        origins = _remote.read_origins(self.dir)  # validated: 32-hex keys, short strings
        for e in out:
            o = origins.get(e.get("key"))
            e["origin"] = "fleet" if o else "local"
            e["origin_detail"] = (f"pulled from {o['remote']}, published by {o['publisher'] or '?'}"
                                  if o else "tuned or imported here")
        return out

    def act(self, key: str, action: str):
        if not CACHE_KEY.match(key):
            raise Refused(400, "bad cache key")
        _, lib = self._lib()
        d = self.dir.encode()
        with self.lock:
            if action == "delete":
                self._call(lib.kf_cache_dir_rm, d, key.encode())
            elif action in ("disable", "enable"):
                self._call(lib.kf_cache_dir_set_disabled, d, key.encode(),
                           1 if action == "disable" else 0, b"disabled in kforge ui")
            else:
                raise Refused(404, f"no action {action}")

    def export(self, ops):
        _, lib = self._lib()
        n = ctypes.c_int(0)
        fd, path = tempfile.mkstemp(prefix="kforge-ui-", suffix=".kfbundle")
        os.close(fd)
        try:
            with self.lock:
                self._call(lib.kf_cache_dir_export, self.dir.encode(), path.encode(),
                           ",".join(ops).encode(), ctypes.byref(n))
            with open(path, "rb") as f:
                return f.read(), n.value
        finally:
            os.unlink(path)


class App:
    """What the handlers read: the folders and the run file."""

    def __init__(self, cache_dir: str, jobs_dir: str, stats_file: str | None = None):
        self.cache = Cache(cache_dir)
        self.jobs_dir = jobs_dir
        self.stats_file = stats_file

    # ---- jobs
    def job_dir(self, job_id: str) -> str:
        if not JOB_ID.match(job_id):
            raise Refused(403, "bad job id")
        path = inside(self.jobs_dir, job_id)
        for name in JOB_FILES[1:]:  # a job with any of them linked out is refused as a whole
            inside(path, name)
        if not os.path.isfile(inside(path, "job.json")):
            raise Refused(404, "no such job")
        return path

    def _state(self, path, result):
        if result is not None:
            return "done"
        try:
            moved = os.path.getmtime(inside(path, "progress.jsonl"))
        except OSError:
            moved = os.path.getmtime(inside(path, "job.json"))
        return "running" if time.time() - moved < LIVE_WINDOW_S else "unfinished"

    def jobs(self):
        out = []
        try:
            names = os.listdir(self.jobs_dir)
        except OSError:
            return out
        for name in names:
            try:  # a job whose files link out of its folder is not listed
                out.append(self._summary(name))
            except Refused:
                continue
        out.sort(key=lambda j: -j["mtime"])
        return out

    def _summary(self, name: str) -> dict:
        path = self.job_dir(name)
        job = read_json(inside(path, "job.json")) or {}
        res = read_json(inside(path, "result.json"))
        r = res or {}
        return {"id": name, "op": job.get("op"), "signature": job.get("signature"),
                "backend": job.get("backend"), "state": self._state(path, res),
                "status": r.get("status"), "eager_us": r.get("eager_us", job.get("eager_us")),
                "best_us": r.get("best_us"), "speedup": r.get("speedup"),
                "iterations": r.get("iterations"), "cache_key": r.get("cache_key"),
                "wall_s": r.get("wall_s"), "mtime": os.path.getmtime(inside(path, "job.json"))}

    def job(self, job_id: str):
        path = self.job_dir(job_id)
        job = read_json(inside(path, "job.json")) or {}
        job.pop("cases", None)
        job.pop("sig_hex", None)
        tree = read_json(inside(path, "tree.json")) or {}
        res = read_json(inside(path, "result.json"))
        nodes = tree.get("nodes") or []
        # the page draws thousands of nodes: send only what the tree and its tooltips need
        compact = [[n.get("id"), n.get("parent"), n.get("status"), n.get("latency_us"),
                    n.get("change"), n.get("depth")] for n in nodes if isinstance(n, dict)]
        meta = {k: v for k, v in tree.items() if k != "nodes"}
        return {"id": job_id, "job": job, "tree": meta, "nodes": compact, "result": res,
                "progress": read_progress(inside(path, "progress.jsonl")),
                "state": self._state(path, res)}

    def live(self, job_id: str, since: int):
        path = self.job_dir(job_id)
        res = read_json(inside(path, "result.json"))
        return {"progress": read_progress(inside(path, "progress.jsonl"), since),
                "result": res, "state": self._state(path, res)}

    def candidate(self, job_id: str, node_id: str):
        path = self.job_dir(job_id)
        if not node_id.isdigit() or len(node_id) > 9:
            raise Refused(403, "bad node id")
        nid = int(node_id)
        tree = read_json(inside(path, "tree.json")) or {}
        nodes = {n.get("id"): n for n in tree.get("nodes") or [] if isinstance(n, dict)}
        node = nodes.get(nid)
        if node is None:
            raise Refused(404, "no such node")
        cand = inside(path, "candidates")

        def source_of(i):
            for ext in (".c", ".cu"):  # names built here, never taken from tree.json
                text = read_text(inside(cand, f"{i}{ext}"))
                if text is not None:
                    return text, ext[1:]
            return None, None

        src, lang = source_of(nid)
        parent = node.get("parent")
        psrc = source_of(parent)[0] if isinstance(parent, int) and parent >= 0 else None
        diff = []
        if src is not None and psrc is not None:
            for line in difflib.unified_diff(psrc.splitlines(), src.splitlines(), f"node {parent}",
                                             f"node {nid}", n=3, lineterm=""):
                diff.append(line)
        launch_text = read_text(inside(cand, f"{nid}.launch.json"))
        try:
            launch = json.loads(launch_text) if launch_text else None
        except ValueError:
            launch = launch_text
        children = [n.get("id") for n in nodes.values() if n.get("parent") == nid]
        return {"job_id": job_id, "node": node, "source": src, "lang": lang, "parent_source": psrc is not None,
                "diff": diff, "launch": _clean(launch), "log": read_text(inside(cand, f"{nid}.log")),
                "children": children, "op": tree.get("op"), "signature": tree.get("signature"),
                "eager_us": tree.get("eager_us"), "roofline_us": tree.get("roofline_us")}

    # ---- overview
    def run_rows(self):
        """The last recorded run: a warmup --json file ({"rows": ...}) or a stats list."""
        if not self.stats_file:
            return None, None
        doc = read_json(os.path.realpath(self.stats_file))  # the user's own file: links are fine
        if doc is None:
            return [], f"could not read {self.stats_file}"
        rows = doc.get("rows") if isinstance(doc, dict) else doc
        return [r for r in rows or [] if isinstance(r, dict)], None

    def tuner(self):
        """The newest online tuner's status file (JOBS_DIR/tuner-PID.json, _tuner.py), summed
        up in one line's worth of fields; None without one. Untrusted: only numbers and short
        strings of the expected kinds are passed on."""
        best, when = None, 0.0
        try:
            names = [n for n in os.listdir(self.jobs_dir) if TUNER_FILE.match(n)]
        except OSError:
            return None
        for n in names:
            try:
                m = os.path.getmtime(inside(self.jobs_dir, n))
            except (OSError, Refused):
                continue
            if m > when:
                best, when = n, m
        doc = read_json(inside(self.jobs_dir, best)) if best else None
        if not isinstance(doc, dict):
            return None

        def num(v):
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        def text(v):
            return v[:300] if isinstance(v, str) else None

        landed = [x for x in doc.get("landed") or [] if isinstance(x, dict)]
        refused = [x for x in doc.get("refused") or [] if isinstance(x, dict)]
        checks = [x for x in doc.get("checks") or [] if isinstance(x, dict)]
        keep = checks[-1].get("keep") if checks else None
        cur = doc.get("current") if isinstance(doc.get("current"), dict) else None
        spent = doc.get("time_spent_s") if isinstance(doc.get("time_spent_s"), dict) else {}
        return {"pid": num(doc.get("pid")), "phase": text(doc.get("phase")),
                "queue": len(doc.get("queue") or []) if isinstance(doc.get("queue"), list) else 0,
                "current": text(cur.get("signature")) if cur else None,
                "current_pass": text(cur.get("pass")) if cur else None,
                "landed": len(landed), "refused": len(refused),
                "first_landed_s": num(landed[0].get("after_hot_s")) if landed else None,
                "last_refusal": text(refused[-1].get("reason")) if refused else None,
                "checks": len(checks),  # the model checks: what the last one kept
                "last_check": keep if keep in ("all", "ops", "none") else None,
                "worker_busy_s": num(spent.get("worker_busy")), "elapsed_s": num(doc.get("elapsed_s")),
                "duty": num((doc.get("settings") or {}).get("duty"))
                if isinstance(doc.get("settings"), dict) else None,
                "age_s": time.time() - when}

    def overview(self):
        entries = self.cache.entries()
        rows, err = self.run_rows()
        source = "run file"
        jobs = self.jobs()
        latest = {}  # (op, signature) -> the newest job folder that tuned it
        for j in reversed(jobs):
            latest[(j["op"], j["signature"])] = j
        if rows is None:  # no run file: the tuned signatures, from the job folders
            source = "job folders"
            rows = []
            for j in jobs:
                rows.append({"op": j["op"], "signature": j["signature"], "share": None,
                             "eager_us": j["eager_us"], "best_us": j["best_us"],
                             "speedup": j["speedup"], "status": j["status"] or j["state"],
                             "job_dir": j["id"]})
        by_sig = {}
        for e in entries:
            by_sig.setdefault((e.get("op"), e.get("signature")), []).append(e)
        jobs_real = os.path.realpath(self.jobs_dir)
        for r in rows:
            j = latest.get((r.get("op"), r.get("signature")))
            if j and not r.get("job_dir"):
                r["job_dir"] = j["id"]
                r.setdefault("status", j["status"] or j["state"])
            es = by_sig.get((r.get("op"), r.get("signature")), [])
            live = [e for e in es if not e.get("disabled")]
            if live:
                e = live[0]
                r["served_by"] = e.get("key")
                r["why"] = "served"
                if isinstance(r.get("served"), int) and not isinstance(r.get("served"), bool):
                    # a stats row: what the run actually did with the entry
                    r["why"] = (f"served ({r['served']} calls)" if r["served"] > 0 else
                                "entry enabled, calls fell back (speed guard or validation)")
                r["forged_us"] = e.get("kernel_us")
                r["entry_eager_us"] = e.get("eager_us")
                r["entry_speedup"] = (e["eager_us"] / e["kernel_us"]
                                      if e.get("kernel_us") and e.get("eager_us") else None)
            elif es:
                r["why"] = "entry disabled: " + str(es[0].get("disabled_reason") or "")
            else:
                r["why"] = "no entry" + (f" ({r['status']})" if r.get("status") else "")
            jd = r.get("job_dir")
            if isinstance(jd, str) and jd:  # link only to jobs that are under the served folder
                name = os.path.basename(os.path.normpath(jd))
                full = os.path.realpath(jd) if os.path.isabs(jd) else os.path.join(jobs_real, name)
                r["job_id"] = name if os.path.dirname(full) == jobs_real and JOB_ID.match(name) else None
        # Amdahl over the rows whose share is known: time left = unsped part + sped part / s
        known = [r for r in rows if isinstance(r.get("share"), (int, float))]
        covered = sum(r["share"] for r in known)
        left = 1.0 - covered
        for r in known:
            s = r.get("entry_speedup")
            left += r["share"] / s if s and s > 0 else r["share"]
        saving = {"covered_share": covered, "time_fraction": left,
                  "speedup": 1.0 / left if left > 0 else None} if known else None
        return {"rows": rows, "rows_source": source, "rows_error": err, "stats_file": self.stats_file,
                "cache_dir": self.cache.dir, "jobs_dir": self.jobs_dir,
                "cache": {"entries": len(entries),
                          "disabled": sum(1 for e in entries if e.get("disabled"))},
                "saving": saving, "tuner": self.tuner()}


def authority_host(value: str | None) -> str | None:
    """The host name of a Host header or an origin's authority ("[::1]:8765" -> "::1"),
    lowercased; None when absent or malformed."""
    if not value or any(c in value for c in "@/\\ \t\r\n?#"):
        return None
    try:
        name = urllib.parse.urlsplit("//" + value).hostname
    except ValueError:
        return None
    return name or None


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


class Handler(BaseHTTPRequestHandler):
    server_version = "kforge-ui"
    app: App = None  # set by make_server
    allowed_hosts: frozenset = frozenset()  # set by make_server: names a request may address
    any_ip: bool = False  # bound to a wildcard address: any IP literal Host is ours too
    token: str = ""  # set by make_server: what an action must carry

    def _host_ok(self, name: str | None) -> bool:
        return bool(name) and (name in self.allowed_hosts or (self.any_ip and is_ip_literal(name)))

    def _check_host(self):
        """DNS rebinding: a rebound page's requests carry its own site's name as Host."""
        host = self.headers.get("Host")
        if not self._host_ok(authority_host(host)):
            raise Refused(403, f"refused Host {host!r}: kforge ui answers to "
                               f"{', '.join(sorted(self.allowed_hosts))}"
                               + (" and IP addresses" if self.any_ip else "")
                               + " (kforge ui --allow-host NAME adds a name)")

    def log_message(self, fmt, *args):  # quiet unless asked
        if os.environ.get("KFORGE_UI_LOG"):
            sys.stderr.write("kforge ui: " + (fmt % args) + "\n")

    def _send(self, code, body: bytes, ctype="application/json; charset=utf-8", extra=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, code, msg):
        self._send(code, dumps({"error": msg}))

    def _route(self):
        raw = self.path.split("?", 1)[0]
        query = urllib.parse.parse_qs(self.path.split("?", 1)[1]) if "?" in self.path else {}
        parts = [urllib.parse.unquote(p) for p in raw.split("/")[1:]]
        # after decoding, no component may be a dot name or carry a separator (%2e%2e, %2f)
        for p in parts:
            if p in (".", "..") or "/" in p or "\\" in p or "\0" in p:
                raise Refused(403, "refused path")
        return raw, parts, query

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        try:
            raw, parts, query = self._route()
            self._check_host()
            if raw in STATIC:
                name, ctype = STATIC[raw]
                with open(os.path.join(STATIC_DIR, name), "rb") as f:
                    body = f.read()
                if name == "index.html":  # the page's copy of the token (its meta tag)
                    body = body.replace(TOKEN_SLOT, b'content="' + self.token.encode() + b'"')
                return self._send(200, body, ctype)
            if not parts or parts[0] != "api":
                raise Refused(404, "not found")
            a = self.app
            rest = parts[1:]
            if rest == ["overview"]:
                return self._send(200, dumps(a.overview()))
            if rest == ["jobs"]:
                return self._send(200, dumps(a.jobs()))
            if rest == ["cache"]:
                return self._send(200, dumps({"dir": a.cache.dir, "entries": a.cache.entries()}))
            if len(rest) == 2 and rest[0] == "job":
                return self._send(200, dumps(a.job(rest[1])))
            if len(rest) == 3 and rest[0] == "job" and rest[2] == "live":
                since = query.get("since", ["0"])[0]
                return self._send(200, dumps(a.live(rest[1], int(since) if since.isdigit() else 0)))
            if len(rest) == 4 and rest[0] == "job" and rest[2] == "candidate":
                return self._send(200, dumps(a.candidate(rest[1], rest[3])))
            raise Refused(404, "not found")
        except Refused as e:
            self._error(e.code, str(e))
        except Exception as e:  # the page shows it; the server keeps serving
            self._error(500, f"{type(e).__name__}: {e}")

    def do_POST(self):
        try:
            self._check_host()
            # only our page holds the token; a custom header also needs a preflight we never answer
            sent = self.headers.get(TOKEN_HEADER) or ""
            if not hmac.compare_digest(sent.encode(), self.token.encode()):
                raise Refused(403, f"refused action: missing or wrong {TOKEN_HEADER} header (the "
                                   "page sends it; README \"Inspection UI\")")
            origin = self.headers.get("Origin")
            if origin is not None and not (urllib.parse.urlsplit(origin).scheme == "http"
                                           and self._host_ok(authority_host(
                                               urllib.parse.urlsplit(origin).netloc))):
                raise Refused(403, f"cross-origin request refused (Origin {origin!r})")
            _, parts, query = self._route()
            rest = parts[1:] if parts and parts[0] == "api" else None
            if rest and len(rest) == 3 and rest[0] == "cache" and rest[1] != "export":
                self.app.cache.act(rest[1], rest[2])
                return self._send(200, dumps({"ok": True, "key": rest[1], "action": rest[2]}))
            if rest == ["cache", "export"]:
                ops = [o for o in query.get("op", []) if o]
                data, n = self.app.cache.export(ops)
                return self._send(200, data, "application/octet-stream",
                                  {"Content-Disposition": 'attachment; filename="kforge-cache.kfbundle"',
                                   "X-KForge-Entries": str(n)})
            raise Refused(404, "not found")
        except Refused as e:
            self._error(e.code, str(e))
        except Exception as e:
            self._error(500, f"{type(e).__name__}: {e}")


def make_server(host: str, port: int, cache_dir: str, jobs_dir: str, stats_file: str | None = None,
                *, token: str | None = None, allow_hosts=()):
    """The server (not yet serving). Requests must address `host`, a loopback name or one of
    `allow_hosts`; actions must carry `token` (random when None), which is srv.token."""
    token = token or secrets.token_urlsafe(32)
    if not TOKEN.match(token):
        raise ValueError("the UI token must be 16-200 characters of A-Z a-z 0-9 _ . ~ -")
    names = {n.lower().strip("[]") for n in (*LOOPBACK_NAMES, host, *allow_hosts) if n}
    handler = type("BoundHandler", (Handler,), {
        "app": App(cache_dir, jobs_dir, stats_file), "token": token,
        "allowed_hosts": frozenset(n for n in names if n not in WILDCARD),
        "any_ip": host in WILDCARD})
    srv = ThreadingHTTPServer((host, port), handler)
    srv.daemon_threads = True
    srv.token = token
    return srv


def serve(host="127.0.0.1", port=8765, cache_dir=None, jobs_dir=None, stats_file=None,
          allow_hosts=()) -> int:
    if cache_dir is None:
        import kernel_forge as kf
        cache_dir = kf.cache_dir()
    cache_dir = os.path.abspath(cache_dir)
    jobs_dir = os.path.abspath(jobs_dir or os.environ.get("KFORGE_JOBS_DIR")
                               or os.path.join(cache_dir, "jobs"))
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"kforge ui: WARNING: listening on {host}: anyone who can reach it can read your "
              "kernels and job folders and change the cache", file=sys.stderr)
    try:
        srv = make_server(host, port, cache_dir, jobs_dir, stats_file,
                          token=os.environ.get("KFORGE_UI_TOKEN") or None, allow_hosts=allow_hosts)
    except ValueError as e:
        print(f"kforge ui: KFORGE_UI_TOKEN: {e}", file=sys.stderr)
        return 2
    print(f"kforge ui: http://{host}:{srv.server_address[1]}/  (cache {cache_dir}, jobs {jobs_dir}"
          + (f", run {stats_file}" if stats_file else "") + ")", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0
