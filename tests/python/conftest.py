import os
import subprocess
import sys

import tempfile

import pytest

# The tests never touch the user's kernel cache: one empty folder for this session, set before
# the plugin loads (it reads KFORGE_CACHE_DIR once, at load).
os.environ["KFORGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="kforge-test-cache-")

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
        if k.startswith("KFORGE_") and k != "KFORGE_CACHE_DIR":
            del env[k]
    env.update(env_extra or {})
    args = [sys.executable] + (["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
