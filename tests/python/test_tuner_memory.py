"""Measuring in the user's process (online tuning, tune, warmup) never risks its GPU memory or
times the model's kernels: the L2-flush buffer and the copy-bandwidth probe are bounded by the
device's free memory, eager is timed on a private stream, and a signature too big to copy and
measure beside the model is skipped.

The sizing rules and the CUDA code path run here with torch.cuda replaced by a recorder (this
machine has no GPU); the `gpu` tests check the same on a real device."""

import threading
import time

import pytest
import torch

from kernel_forge import _jobs, _tuner

GiB, MiB = 1 << 30, 1 << 20
H200_L2 = 50 * MiB  # what get_device_properties reports on an H100/H200 (GH100)


# ---------------------------------------------------------------- sizing

@pytest.mark.parametrize("free", [0, 1, 64 * MiB, 1 * GiB, 1600 * MiB, 3 * GiB, 8 * GiB, 139 * GiB])
@pytest.mark.parametrize("l2", [0, 6 * MiB, H200_L2, 96 * MiB])
def test_measurement_buffers_stay_within_the_free_memory_fraction(free, l2):
    f = _jobs.flush_bytes(free, l2)
    p = _jobs.copy_probe_bytes(free, l2)
    assert 0 <= f <= min(_jobs.FLUSH_BYTES, free * _jobs.MEASURE_FREE_FRACTION)
    assert 0 <= 2 * p <= min(2 * _jobs.COPY_PROBE_BYTES, free * _jobs.MEASURE_FREE_FRACTION)
    # a flush that happens evicts the L2 (twice over); a probe that happens runs from DRAM
    assert f == 0 or f >= (2 * l2 if l2 else _jobs.FLUSH_BYTES)
    assert p == 0 or p >= max(4 * l2, 64 * MiB)


def test_a_roomy_gpu_measures_as_the_worker_does():
    # the H200 (139 GiB free): the worker's 256 MB flush and the 1 GiB probe, as before
    assert _jobs.flush_bytes(139 * GiB, H200_L2) == _jobs.FLUSH_BYTES == 256 * MiB
    assert _jobs.copy_probe_bytes(139 * GiB, H200_L2) == 1 * GiB


def test_a_full_gpu_gets_no_flush_and_no_probe():
    # 1.5 GiB free: 96 MiB may be used, less than twice the L2 and than 4x the L2
    assert _jobs.flush_bytes(1536 * MiB, H200_L2) == 0
    assert _jobs.copy_probe_bytes(1536 * MiB, H200_L2) == 0
    # 2 GiB free on a 40 MB-L2 part: a 128 MiB flush still evicts it; a 64 MiB probe does not run from DRAM
    assert _jobs.flush_bytes(2 * GiB, 40 * MiB) == 128 * MiB
    assert _jobs.copy_probe_bytes(2 * GiB, 40 * MiB) == 0


# ---------------------------------------------------------------- the CUDA path, recorded

class FakeCuda:
    """torch.cuda's stream/event/memory calls bench_us and copy_bandwidth_gbs make, logged."""

    def __init__(self, monkeypatch, free, l2):
        self.log, self.allocated, self.current = [], [], "default"
        fake = self
        real_empty, real_ones = torch.empty, torch.ones

        class Stream:
            def __init__(self, device=None):
                self.name = f"private{len([e for e in fake.log if e[0] == 'new_stream'])}"
                fake.log.append(("new_stream", self.name))

            def wait_stream(self, other):
                fake.log.append(("wait_stream", self.name, other))

            def synchronize(self):
                fake.log.append(("stream_sync", self.name))

        class StreamCtx:
            def __init__(self, s):
                self.s = s

            def __enter__(self):
                self.prev, fake.current = fake.current, self.s.name

            def __exit__(self, *a):
                fake.current = self.prev

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self, stream=None):
                self.on = stream.name if stream is not None else fake.current
                self.t = time.perf_counter()
                fake.log.append(("record", self.on))

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return (other.t - self.t) * 1e3

        class Buf:
            def __init__(self, n):
                self.n = n

            def zero_(self):
                fake.log.append(("flush", fake.current, self.n))

            def copy_(self, other):
                fake.log.append(("copy", fake.current, self.n))

        def alloc(real):
            def f(*size, dtype=None, device=None, **kw):
                if device is not None and torch.device(device).type == "cuda":
                    n = size[0] if isinstance(size[0], int) else size[0][0]
                    fake.allocated.append((n, fake.current))
                    return Buf(n)
                return real(*size, dtype=dtype, device=device, **kw)
            return f

        monkeypatch.setattr(torch.cuda, "Stream", Stream)
        monkeypatch.setattr(torch.cuda, "stream", StreamCtx)
        monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: "default")
        monkeypatch.setattr(torch.cuda, "Event", Event)
        monkeypatch.setattr(torch, "empty", alloc(real_empty))
        monkeypatch.setattr(torch, "ones", alloc(real_ones))
        monkeypatch.setattr(torch, "empty_like", lambda t: alloc(real_empty)(t.n, device="cuda"))
        monkeypatch.setattr(_jobs, "cuda_memory", lambda device: (free, l2))
        monkeypatch.setattr(_jobs, "_bandwidth", {})

    def op(self):
        self.log.append(("op", self.current))


def test_eager_is_timed_on_a_private_stream_with_a_bounded_flush(monkeypatch):
    cu = FakeCuda(monkeypatch, free=3 * GiB, l2=H200_L2)
    us = _jobs.bench_us(cu.op, torch.device("cuda", 0), reps=5)
    assert us >= 0
    kinds = [e[0] for e in cu.log]
    priv = cu.log[0][1]
    assert cu.log[0] == ("new_stream", priv) and cu.log[1] == ("wait_stream", priv, "default")
    # every op, flush and event is on the private stream; the model's stream sees none of it
    assert {e[1] for e in cu.log if e[0] in ("op", "flush", "record")} == {priv}
    assert kinds.count("op") == 3 + 5 and kinds.count("record") == 10 and kinds.count("flush") == 5
    assert cu.allocated == [(3 * GiB // 16, priv)]  # 192 MiB: what 1/16 of 3 GiB allows
    assert kinds[-1] == "stream_sync"  # nothing ours still runs when its memory is freed
    # each timed run: flush, then the events bracket exactly one op
    timed = [e for e in cu.log[2:] if e[0] in ("flush", "record", "op")][3:]
    assert [e[0] for e in timed] == ["flush", "record", "op", "record"] * 5


def test_no_room_means_no_flush_buffer(monkeypatch):
    cu = FakeCuda(monkeypatch, free=1 * GiB, l2=H200_L2)
    _jobs.bench_us(cu.op, torch.device("cuda", 0), reps=4)
    assert cu.allocated == [] and not [e for e in cu.log if e[0] == "flush"]


def test_copy_bandwidth_probe_is_bounded_and_private(monkeypatch):
    cu = FakeCuda(monkeypatch, free=139 * GiB, l2=H200_L2)
    bw = _jobs.copy_bandwidth_gbs(torch.device("cuda"), 1 << 26)
    assert bw > 0
    assert [n for n, _ in cu.allocated] == [1 * GiB, 1 * GiB]  # no flush buffer for the probe
    assert {e[1] for e in cu.log if e[0] in ("copy", "record")} == {cu.log[0][1]}


def test_copy_bandwidth_on_a_full_gpu_is_unknown_and_allocates_nothing(monkeypatch):
    cu = FakeCuda(monkeypatch, free=1536 * MiB, l2=H200_L2)
    assert _jobs.copy_bandwidth_gbs(torch.device("cuda"), 1 << 26) == 0.0
    assert cu.allocated == [] and cu.log == []
    assert _jobs._bandwidth == {}  # tried again later, when memory may be free


# ---------------------------------------------------------------- the online tuner

def row(**kw):
    r = {"key": "0" * 16, "signature": "s", "op": "aten::_softmax", "intercepted": True,
         "servable": True, "has_kernel": False, "calls": 100, "share": 0.5, "time_ms": 10.0,
         "eager_us": 100.0, "device": "cuda:0", "bytes_moved": 100 * MiB}
    r.update(kw)
    return r


def test_a_signature_too_big_to_measure_beside_the_model_is_skipped(monkeypatch):
    monkeypatch.setattr(_jobs, "cuda_memory", lambda device: (2 * GiB, H200_L2))
    assert _tuner.memory_shortfall(row(bytes_moved=80 * MiB), 3) is None  # 480 of 512 MiB
    why = _tuner.memory_shortfall(row(bytes_moved=200 * MiB), 3)  # 1200 MiB > 512 MiB
    assert why and "1200 MiB" in why and "2048 MiB free" in why
    assert _tuner.memory_shortfall(row(device="cpu", bytes_moved=100 * GiB), 3) is None
    # an embedding moves a few rows but its captures hold the table: the footprint counts
    assert _tuner.memory_shortfall(row(bytes_moved=1 * MiB, footprint_bytes=200 * MiB), 3)

    def broken(device):
        raise RuntimeError("CUDA error: unknown")
    monkeypatch.setattr(_jobs, "cuda_memory", broken)
    assert "unknown" in _tuner.memory_shortfall(row(), 3)


def test_tune_one_skips_before_copying_any_call(monkeypatch):
    monkeypatch.setattr(_jobs, "cuda_memory", lambda device: (1 * GiB, H200_L2))
    asked = []
    monkeypatch.setattr(_tuner, "request_captures", lambda key, n: asked.append(key))
    t = _tuner.OnlineTuner()
    try:
        t.tune_one(row(bytes_moved=200 * MiB), {})
    finally:
        t.shutdown()
    assert asked == [] and t.results == []


def test_the_tuner_measures_nothing_until_a_signature_is_hot(monkeypatch):
    import kernel_forge as kf

    polls, probes = [], []

    def stats():
        polls.append(1)
        return [row(calls=1)]  # below min_calls: not hot
    monkeypatch.setattr(kf, "stats", stats)
    monkeypatch.setattr(_jobs, "copy_bandwidth_gbs", lambda *a: probes.append(a) or 1.0)
    t = _tuner.OnlineTuner()
    t.cfg["interval_s"] = 0.01
    t.start()
    end = time.monotonic() + 10
    while len(polls) < 5 and time.monotonic() < end:
        time.sleep(0.01)
    t.shutdown()
    t.join(10)
    assert len(polls) >= 5 and probes == []


# ---------------------------------------------------------------- on a GPU (the lead's H200)

def sleep_cycles(dev, ms):
    """Cycles of torch.cuda._sleep that take about `ms` milliseconds on this GPU."""
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        a.record(s)
        torch.cuda._sleep(10_000_000)
        b.record(s)
        b.synchronize()
    return int(10_000_000 * ms / a.elapsed_time(b))


@pytest.mark.gpu
def test_gpu_model_kernels_stay_out_of_the_timed_interval():
    """While each timed run is in flight, a 'model' thread enqueues 50 ms of work on the default
    stream (as a model's forward does, far ahead of the GPU): on the shared default stream it
    would lie between our events; on the private stream it runs beside them."""
    dev = torch.device("cuda")
    x = torch.zeros(1024, device=dev)
    cycles = sleep_cycles(dev, 50)
    torch.cuda.synchronize()
    go, done, stop = threading.Event(), threading.Event(), threading.Event()

    def model():  # its current stream is the default stream, as the user's model's is
        while not stop.is_set():
            if go.wait(0.1):
                go.clear()
                torch.cuda._sleep(cycles)
                done.set()
    m = threading.Thread(target=model, daemon=True)
    m.start()

    def fn():
        x.add_(1)
        go.set()
        assert done.wait(30)
        done.clear()
    out = {}

    def tuner():
        with _jobs.bypass():
            out["us"] = _jobs.bench_us(fn, dev, reps=10)
    try:
        t = threading.Thread(target=tuner)
        t.start()
        t.join(120)
    finally:
        stop.set()
        m.join(30)
        torch.cuda.synchronize()
    assert out["us"] < 10000, out  # with the model's kernel inside the interval: >= 50000 us


@pytest.mark.gpu
def test_gpu_measurements_stay_within_the_free_memory_fraction():
    """With the GPU nearly full (1.5 GiB left), flush buffer and probe allocate at most 1/16 of
    what is free, and nothing raises out of memory."""
    dev = torch.device("cuda")
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info(dev)
    hog = torch.empty(max(free - 1536 * MiB, 0), dtype=torch.uint8, device=dev)
    try:
        free_now, _ = _jobs.cuda_memory(dev)
        x = torch.zeros(1 << 20, device=dev)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        _jobs._bandwidth.clear()
        with _jobs.bypass():
            bw = _jobs.copy_bandwidth_gbs(dev, 1 << 26)
            us = _jobs.bench_us(lambda: x.mul_(1.0), dev, reps=5)
        peak = torch.cuda.max_memory_allocated(dev) - base
        assert peak <= free_now * _jobs.MEASURE_FREE_FRACTION + x.numel() * 4 * 2, (peak, free_now)
        assert us > 0 and bw >= 0
    finally:
        del hog
        _jobs._bandwidth.clear()
        torch.cuda.empty_cache()
    # roomy again: the full-size probe gives the DRAM ceiling (H200: about 4000 GB/s)
    with _jobs.bypass():
        bw = _jobs.copy_bandwidth_gbs(dev, 1 << 26)
    assert bw > 100
