"""The fleet cache: cache entries shared through Redis (KFORGE_REMOTE_CACHE=redis://host:port/db).

Why here and not in C: every process that tunes or serves already runs this package (the online
tuner, `kforge warmup`, the CLI), the network stays entirely off the C serving path, and the C
side already validates what a remote value is: a one-entry bundle (`kforge cache export`).

  push: export one entry (kf_cache_dir_export, filtered by its key) and SET it under
        <prefix>:v1:entry:<cache key>; a small JSON description goes under :meta: (for
        `kforge cache ls --remote`; display only, never trusted) and the key into :index.
  pull: GET into a temp file and kf_cache_dir_import it: checksums, formats, versions and the
        key <-> manifest rule are checked exactly as for a bundle member (host kernels follow the
        bundle trust rule), then the plugin's reload serves it and its first-use check runs.
  lease: SET <prefix>:v1:lease:<key> <owner> NX PX <ms>, renewed by a thread while the search
        runs, released only if still ours (Lua): one search per signature for the whole fleet.

The cache key (signature + backend + arch + toolchain + versions, no paths; kf_signature_cache_key)
names the Redis key, so processes that could not use each other's entries never see them. Redis
down: one warning, back-off, the model runs on what it has (local cache, eager). A bad value: one
warning, nothing installed.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import re
import socket
import struct
import tempfile
import threading
import time
import uuid
from urllib.parse import urlsplit

from . import _native

log = logging.getLogger("kernel_forge")

FORMAT = "v1"  # of the Redis layout; a new one gets new key names, never reads old values
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_MAX_VALUE = 256 << 20
_ORIGINS = "remote-origins.json"
_MAX_ORIGINS_BYTES = 4 << 20

_RENEW = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
          "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end")
_RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
            "return redis.call('del', KEYS[1]) else return 0 end")


class RemoteError(_native.KernelForgeError):
    """The fleet cache could not be used (not configured, unreachable, bad value)."""


def _env_float(name: str, default: float, lo: float) -> float:
    v = os.environ.get(name, "")
    try:
        x = float(v) if v else default
    except ValueError:
        log.warning("%s=%r is not a number; using %g", name, v, default)
        return default
    return x if x >= lo else default


def settings() -> dict:
    """The fleet cache's knobs (README, "Fleet cache (Redis)")."""
    return {
        "url": os.environ.get("KFORGE_REMOTE_CACHE", ""),
        "password_file": os.environ.get("KFORGE_REMOTE_CACHE_PASSWORD_FILE", ""),
        "prefix": os.environ.get("KFORGE_REMOTE_PREFIX", "") or "kforge",
        "timeout_s": _env_float("KFORGE_REMOTE_TIMEOUT", 2.0, 0.05),
        "poll_s": _env_float("KFORGE_REMOTE_POLL", 2.0, 0.05),
        "lease_ms": int(_env_float("KFORGE_REMOTE_LEASE_MS", 60000, 100)),
        "wait_s": _env_float("KFORGE_REMOTE_WAIT", 600, 0),
        "none_s": _env_float("KFORGE_REMOTE_NONE_TTL", 86400, 0),
    }


def redact(url: str) -> str:
    """scheme://host:port/db: never the password or user name."""
    try:
        u = urlsplit(url)
        host = u.hostname or "?"
        port = f":{u.port}" if u.port else ""
        return f"{u.scheme}://{host}{port}{u.path or ''}"
    except ValueError:
        return "(unparsable KFORGE_REMOTE_CACHE)"


def _is_down(e: Exception) -> bool:
    import redis

    return isinstance(e, (redis.ConnectionError, redis.TimeoutError, OSError))


class Remote:
    """One Redis connection pool and the fleet-cache operations on it. Thread-safe (redis-py's
    pool); warnings are said once per kind and value."""

    def __init__(self, cfg: dict | None = None):
        self.cfg = cfg or settings()
        url = self.cfg["url"]
        if not url:
            raise RemoteError("KFORGE_REMOTE_CACHE is not set")
        scheme = urlsplit(url).scheme
        if scheme not in ("redis", "rediss"):
            raise RemoteError(f"KFORGE_REMOTE_CACHE={redact(url)}: only redis:// and rediss:// "
                              "URLs are supported")
        try:
            import redis
        except ImportError as e:
            raise RemoteError("KFORGE_REMOTE_CACHE is set but the redis package is not installed "
                              "(pip install redis)") from e
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # no retries inside the client: one timeout per attempt, our own back-off between them
        kw = {"socket_timeout": self.cfg["timeout_s"],
              "socket_connect_timeout": self.cfg["timeout_s"], "retry": Retry(NoBackoff(), 0)}
        if self.cfg["password_file"]:
            try:
                with open(self.cfg["password_file"], encoding="utf-8") as f:
                    kw["password"] = f.readline().rstrip("\r\n")
            except OSError as e:
                raise RemoteError(f"KFORGE_REMOTE_CACHE_PASSWORD_FILE: cannot read it "
                                  f"({e.strerror})") from None
        self.where = redact(url)
        self.client = redis.Redis.from_url(url, **kw)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._renew = self.client.register_script(_RENEW)
        self._release = self.client.register_script(_RELEASE)
        self._lock = threading.Lock()
        self._down = False
        self._refused: dict[str, str] = {}  # cache key -> digest of the value refused

    # ---- names ----
    def name(self, kind: str, key: str = "") -> str:
        return f"{self.cfg['prefix']}:{FORMAT}:{kind}" + (f":{key}" if key else "")

    # ---- reachability: one warning per outage ----
    def went_down(self, e: Exception) -> None:
        with self._lock:
            first, self._down = not self._down, True
        if first:
            log.warning("fleet cache %s unreachable (%s); serving from the local cache and eager, "
                        "retrying with back-off", self.where, type(e).__name__)

    def came_up(self) -> None:
        with self._lock:
            was, self._down = self._down, False
        if was:
            log.info("fleet cache %s reachable again", self.where)

    @property
    def down(self) -> bool:
        return self._down

    # ---- entries ----
    def push(self, cache_dir: str, key: str) -> dict:
        """Publish the local entry `key` (a one-entry bundle). Returns its description."""
        if not _HEX32.match(key or ""):
            raise RemoteError(f"push: {key!r} is not a cache key")
        lib = _native.lib()
        with tempfile.TemporaryDirectory(prefix="kforge-push-") as tmp:
            path = os.path.join(tmp, "entry.kfbundle")
            n = ctypes.c_int(0)
            err = ctypes.create_string_buffer(1024)
            code = lib.kf_cache_dir_export(cache_dir.encode(), path.encode(), key.encode(),
                                           ctypes.byref(n), err, len(err))
            if code or n.value != 1:
                raise RemoteError(f"push {key}: {err.value.decode() or 'no such entry'}")
            with open(path, "rb") as f:
                value = f.read()
        ptr = lib.kf_cache_dir_show_json(cache_dir.encode(), key.encode(), err, len(err))
        e = _native.take_json(ptr) if ptr else {}
        meta = {k: e.get(k) for k in ("op", "signature", "backend", "arch", "eager_us",
                                      "kernel_us", "proposer", "torch_version", "plugin_version")}
        meta.update(publisher=self.owner, published=time.time(), size=len(value))
        p = self.client.pipeline(transaction=True)
        p.set(self.name("entry", key), value)
        p.set(self.name("meta", key), json.dumps(meta))
        p.sadd(self.name("index"), key)
        p.execute()
        return meta

    def keys(self) -> list[str]:
        return sorted(k.decode() for k in self.client.smembers(self.name("index"))
                      if _HEX32.match(k.decode("ascii", "replace")))

    def describe(self, keys: list[str]) -> list[dict]:
        """The published descriptions (untrusted: for display and --op filters only)."""
        out = []
        vals = self.client.mget([self.name("meta", k) for k in keys]) if keys else []
        for k, v in zip(keys, vals):
            d = {"key": k}
            try:
                m = json.loads(v) if v and len(v) < 65536 else {}
            except ValueError:
                m = {}
            if isinstance(m, dict):
                for f in ("op", "signature", "backend", "arch", "publisher", "proposer"):
                    if isinstance(m.get(f), str):
                        d[f] = m[f][:400]
                for f in ("eager_us", "kernel_us", "published", "size"):
                    if isinstance(m.get(f), (int, float)) and not isinstance(m.get(f), bool):
                        d[f] = float(m[f])
            d["present"] = v is not None
            out.append(d)
        return out

    def fetch(self, keys: list[str]) -> dict[str, bytes]:
        """The values published under these cache keys (missing ones left out)."""
        if not keys:
            return {}
        vals = self.client.mget([self.name("entry", k) for k in keys])
        return {k: v for k, v in zip(keys, vals) if v is not None}

    def install(self, cache_dir: str, key: str, value: bytes, publisher: str = "") -> bool:
        """Validate and import a value fetched for `key` into the local cache. A bad value is
        refused with one warning (per key and value) and nothing is installed; returns whether
        the entry is now in the local cache."""
        digest = hashlib.sha256(value).hexdigest()
        if self._refused.get(key) == digest:
            return False
        why = check_value(key, value)
        if why is None:
            why = _import_value(cache_dir, value)
        if why is not None:
            self._refused[key] = digest
            log.warning("fleet cache %s: entry %s refused: %s; not served", self.where, key, why)
            return False
        self._refused.pop(key, None)
        record_origin(cache_dir, key, self.where, publisher)
        return True

    def pull(self, cache_dir: str, keys: list[str]) -> list[str]:
        """Fetch and install these keys; returns the ones installed."""
        got = self.fetch(keys)
        pubs = {d["key"]: d.get("publisher", "") for d in self.describe(list(got))} if got else {}
        return [k for k, v in got.items() if self.install(cache_dir, k, v, pubs.get(k, ""))]

    # ---- leases: one search per signature for the fleet ----
    def try_lease(self, key: str) -> "Lease | None":
        """The lease for tuning `key`, or None when another process holds it."""
        name = self.name("lease", key)
        if not self.client.set(name, self.owner, nx=True, px=self.cfg["lease_ms"]):
            return None
        return Lease(self, name)

    def mark_none(self, key: str, status: str) -> None:
        """A search found no winner for `key`: the fleet does not search it again for none_s."""
        ttl = int(self.cfg["none_s"])
        if ttl > 0:
            self.client.set(self.name("none", key), f"{status} by {self.owner}"[:300], ex=ttl)

    def none_reason(self, key: str) -> str | None:
        v = self.client.get(self.name("none", key))
        return v.decode("utf-8", "replace")[:300] if v is not None else None

    def lease_holder(self, key: str) -> str | None:
        v = self.client.get(self.name("lease", key))
        return v.decode("utf-8", "replace")[:200] if v is not None else None


class Lease:
    """A held lease, renewed every third of its TTL by a thread until released."""

    def __init__(self, remote: Remote, name: str):
        self.remote, self.name = remote, name
        self.stop = threading.Event()
        self.lost = False
        self.thread = threading.Thread(target=self._renew_loop, name="kforge-lease", daemon=True)
        self.thread.start()

    def _renew_loop(self):
        ttl = self.remote.cfg["lease_ms"]
        while not self.stop.wait(ttl / 3000.0):
            try:
                if not self.remote._renew(keys=[self.name], args=[self.remote.owner, ttl]):
                    self.lost = True  # expired (we were stalled) and maybe taken: keep going
                    return
            except Exception as e:  # a lost connection: the lease may expire; tuning goes on
                if _is_down(e):
                    self.remote.went_down(e)

    def release(self):
        self.stop.set()
        self.thread.join(timeout=5)
        try:
            self.remote._release(keys=[self.name], args=[self.remote.owner])
        except Exception as e:
            if _is_down(e):
                self.remote.went_down(e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


# ---- values ----

def check_value(key: str, value: bytes) -> str | None:
    """Cheap checks before C's full validation: a bundle whose members are exactly this key's
    manifest and blob (so a value stored under one key cannot install another entry). None: ok."""
    if not isinstance(value, (bytes, bytearray)) or len(value) > _MAX_VALUE:
        return "not a value of a plausible size"
    if bytes(value[:8]) != b"KFBUNDLE"[:len(value)]:
        return "not a Kernel Forge bundle (no KFBUNDLE header)"
    if len(value) < 32:
        return "truncated (shorter than a bundle header)"
    fmt, ilen = struct.unpack_from("<II", value, 8)
    if fmt != 1:
        return f"unsupported bundle format {fmt} (another version of Kernel Forge)"
    if 32 + ilen > len(value):
        return "truncated (the index runs past the end)"
    try:
        idx = json.loads(bytes(value[32:32 + ilen]).decode("utf-8"))
        names = sorted(m["name"] for m in idx["members"])
        end = max((int(m["offset"]) + int(m["size"]) for m in idx["members"]), default=0)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, OverflowError):
        return "its index is not valid JSON with member names"
    if 32 + ilen + end > len(value):
        return "truncated (a member runs past the end)"
    if names != [f"{key}.blob", f"{key}.json"]:
        return "its members are not this key's entry"
    return None


def _import_value(cache_dir: str, value: bytes) -> str | None:
    """kf_cache_dir_import of the value through a private temp file; None or why it failed."""
    lib = _native.lib()
    fd, path = tempfile.mkstemp(prefix="kforge-pull-", suffix=".kfbundle")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(value)
        n = ctypes.c_int(0)
        err = ctypes.create_string_buffer(1024)
        code = lib.kf_cache_dir_import(cache_dir.encode(), path.encode(), ctypes.byref(n), err,
                                       len(err))
        if code:
            return err.value.decode("utf-8", "replace").replace(path, "(value)") or \
                _native.status_str(code)
        return None if n.value == 1 else f"{n.value} entries installed, not 1"
    finally:
        os.unlink(path)


# ---- where entries came from (a local, untrusted file: validated on every read) ----

def read_origins(cache_dir: str) -> dict:
    path = os.path.join(cache_dir, _ORIGINS)
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_ORIGINS_BYTES + 1)
        doc = json.loads(raw.decode("utf-8")) if len(raw) <= _MAX_ORIGINS_BYTES else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    out = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(k, str) and _HEX32.match(k) and isinstance(v, dict):
                out[k] = {f: str(v.get(f, ""))[:200] for f in ("remote", "publisher")}
                p = v.get("pulled")
                out[k]["pulled"] = float(p) if isinstance(p, (int, float)) else 0.0
    return out


def record_origin(cache_dir: str, key: str, where: str, publisher: str) -> None:
    """Note that `key` came from the fleet cache (atomic rewrite; losing a race loses a note)."""
    try:
        doc = read_origins(cache_dir)
        doc[key] = {"remote": where, "publisher": publisher[:200], "pulled": time.time()}
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".origins-")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, os.path.join(cache_dir, _ORIGINS))
    except OSError as e:
        log.debug("fleet cache: cannot note where %s came from: %s", key, e)


# ---- this process's fleet cache ----

_state_lock = threading.Lock()
_remote: Remote | None = None
_failed = False
_fetcher = None


def get() -> Remote | None:
    """The process's Remote (None when KFORGE_REMOTE_CACHE is unset or cannot be used: said once)."""
    global _remote, _failed
    if _remote is not None or _failed or not os.environ.get("KFORGE_REMOTE_CACHE"):
        return _remote
    with _state_lock:
        if _remote is None and not _failed:
            try:
                _remote = Remote()
            except RemoteError as e:
                _failed = True
                log.warning("fleet cache: %s; not used", e)
    return _remote


def cache_key_of(sig_key: str) -> str | None:
    """The cache key of a seen signature in this process (None: it has none, e.g. no compiler)."""
    out = ctypes.create_string_buffer(33)
    code = _native.lib().kf_signature_cache_key(_native.runtime(), int(sig_key, 16), None, out)
    return out.value.decode() if code == 0 else None


def publish(result: dict, cache_dir: str, for_key: str | None = None) -> None:
    """After a search for the cache key `for_key`: publish its winner if the worker inserted
    one, else note that it found none. Never raises."""
    r = get()
    key = result.get("cache_key")
    if r is None:
        return
    try:
        if result.get("status") != "inserted" or not key:
            # a finished search without a winner: the rest of the fleet need not repeat it
            if result.get("status") in ("no_faster_kernel", "no_correct_kernel", "no_template") \
                    and for_key:
                r.mark_none(for_key, result["status"])
            return
        r.push(cache_dir, key)
        r.came_up()
        log.info("fleet cache %s: published %s", r.where, key)
    except Exception as e:
        if _is_down(e):
            r.went_down(e)
        else:
            log.warning("fleet cache %s: publishing %s failed: %s", r.where, key, e)


def acquire(r: Remote, key: str) -> tuple[str | None, "Lease | None"]:
    """(holder, lease): (None, lease) when this process may search `key` (lease None: the fleet
    cache is down, so it searches alone), (holder, None) when another process holds the lease."""
    try:
        lease = r.try_lease(key)
        if lease is not None:
            r.came_up()
            return None, lease
        return r.lease_holder(key) or "another process", None
    except Exception as e:
        if _is_down(e):
            r.went_down(e)
        else:
            log.warning("fleet cache %s: lease for %s: %s; tuning here", r.where, key, e)
        return None, None


def claim(r: Remote, cache_dir: str, key: str) -> tuple[str, object]:
    """Before a search for `key`: ("fleet", None) when its entry is (now) in the local cache,
    ("held", holder) while another process holds its lease, ("none", why) when a search in the
    fleet found no winner (KFORGE_REMOTE_NONE_TTL), else ("mine", lease) (lease None:
    the fleet cache is down; search alone). Looks again after taking the lease, so a winner
    published in between is not searched twice."""
    if pull_one(cache_dir, key):
        return "fleet", None
    holder, lease = acquire(r, key)
    if holder:
        return "held", holder
    if lease is not None:
        none = None
        if not pull_one(cache_dir, key):
            try:
                none = r.none_reason(key)
            except Exception as e:
                if _is_down(e):
                    r.went_down(e)
            if none is None:
                return "mine", lease
        lease.release()
        return ("none", none) if none else ("fleet", None)
    return "mine", lease


def local_has(cache_dir: str, key: str) -> bool:
    return os.path.exists(os.path.join(cache_dir, "entries", key + ".json"))


def pull_one(cache_dir: str, key: str) -> bool:
    """Local first, then the fleet: whether `key` is now in the local cache. Never raises."""
    if local_has(cache_dir, key):
        return True
    r = get()
    if r is None:
        return False
    try:
        got = r.pull(cache_dir, [key])
        r.came_up()
        return bool(got)
    except Exception as e:
        if _is_down(e):
            r.went_down(e)
        else:
            log.warning("fleet cache %s: fetching %s failed: %s", r.where, key, e)
        return False


class Fetcher(threading.Thread):
    """Looks up, in the background, the cache keys of the signatures this process sees without a
    kernel, and installs what the fleet has published. Nothing on the model's path waits for it."""

    def __init__(self, remote: Remote):
        super().__init__(name="kforge-fleet", daemon=True)
        self.remote = remote
        self.stop = threading.Event()
        self.keys: dict[str, str | None] = {}  # signature key -> cache key
        self.installed = 0

    def run(self):
        poll = self.remote.cfg["poll_s"]
        delay = poll
        while not self.stop.wait(delay):
            try:
                self.step()
                self.remote.came_up()
                delay = poll
            except Exception as e:  # the user's process must never be harmed
                if _is_down(e):
                    self.remote.went_down(e)
                    delay = min(max(delay * 2, poll), 60.0)
                else:
                    log.warning("fleet cache: %s", e)
                    delay = poll

    def wanted(self) -> list[str]:
        from . import stats

        out = []
        for r in stats():
            if not (r["intercepted"] and r["servable"]) or r["has_kernel"]:
                continue
            k = r["key"]
            if k not in self.keys:
                self.keys[k] = cache_key_of(k)
            if self.keys[k]:
                out.append(self.keys[k])
        return out

    def step(self):
        from . import cache_dir, reload_cache

        d = cache_dir()
        keys = [k for k in self.wanted() if not local_has(d, k)]
        if keys and self.remote.pull(d, keys):
            self.installed += 1
            reload_cache()


def start_fetcher() -> Fetcher | None:
    global _fetcher
    r = get()
    if r is None:
        return None
    with _state_lock:
        if _fetcher is None:
            _fetcher = Fetcher(r)
            _fetcher.start()
    return _fetcher
