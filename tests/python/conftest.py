import os
import subprocess
import sys

import tempfile

import pytest

# The tests never touch the user's kernel cache: one empty folder for this session, set before
# the plugin loads (it reads KFORGE_CACHE_DIR once, at load).
os.environ["KFORGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="kforge-test-cache-")
# The tests exercise interception of every op of the list (pass-through, bit identity, stats),
# in this process and in the ones run_python starts; the default, KFORGE_INTERCEPT=cached (only
# ops with a kernel in the cache), has its own tests, which ask for it (test_intercept_mode.py).
os.environ["KFORGE_INTERCEPT"] = "all"

import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def run_python(code_or_args, env_extra=None, timeout=600):
    """Run a fresh Python process (the plugin is loaded per process) and return it finished."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("KFORGE_") and k not in ("KFORGE_CACHE_DIR", "KFORGE_INTERCEPT"):
            del env[k]
    env.update(env_extra or {})
    args = [sys.executable] + (["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def span_of(t: torch.Tensor) -> bytes:
    """A tensor's strided span, element 0 to its last addressed element (forge/job/job.h), as bytes:
    computed apart from kernel_forge._jobs, to check the case files it writes."""
    import ctypes

    n = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride())) if t.numel() else 0
    flat = t.as_strided((n,), (1,)).cpu().contiguous().view(torch.uint8)
    return ctypes.string_at(flat.data_ptr(), flat.numel())


def check_job_cases(job_dir: str, example_args, device: str = "cpu") -> dict:
    """A job written from one example call (recorded=[False]): its first case holds the example's
    spans, and every case's output files hold eager's outputs on that case's input files."""
    import json

    from kernel_forge import _jobs

    with open(os.path.join(job_dir, "job.json")) as f:
        job = json.load(f)
    fn = _jobs.resolve(job["op"])
    _, args = _jobs.describe(job["key"])
    read = lambda name: open(os.path.join(job_dir, "cases", name), "rb").read()  # noqa: E731
    example = _jobs.tensors_of(list(example_args))
    assert [read(f) for f in job["cases"][0]["inputs"]] == [span_of(t) for t in example]
    for case in job["cases"]:
        ins = []
        for name, desc in zip(case["inputs"], job["inputs"]):
            flat = torch.frombuffer(bytearray(read(name)), dtype=torch.uint8)
            ins.append(flat.view(_jobs._TORCH_DTYPES[desc["dtype"]]).to(device)
                       .as_strided(desc["sizes"], desc["strides"]))
        pos, kw = _jobs.call_from_args(fn, args, ins)
        with _jobs.bypass():
            outs = _jobs.tensors_of(fn(*pos, **kw))
        # then what the call wrote without returning it (batch norm's running stats, training)
        outs += [_jobs.arg_value(fn, pos, kw, i) for i in _jobs.hidden_writes(fn, pos, kw)]
        assert [read(f) for f in case["outputs"]] == [span_of(t) for t in outs], case
    return job


@pytest.fixture
def one_eager_thread():
    """Eager on one intra-op thread (tests that tune host kernels against it): on a small, busy CI
    machine its OpenMP threads wait for a core for milliseconds, and a kernel 10x faster than
    eager is flagged as too fast to trust. The kernels' own OpenMP knob is unaffected."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
