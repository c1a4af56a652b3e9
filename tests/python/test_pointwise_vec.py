"""cuda_pointwise's 128-bit accesses (knob vec, forge/templates/cuda_pointwise.c) on the GPU: for a
contiguous, aligned f32 op that only the pointwise engine serves (rsqrt), with a tail (numel % 4
== 3), the search's vectorized candidates verify against eager, the vectorized kernel is the one
picked when it is the faster, and the served result matches eager. The renders, and vector
against scalar output bit for bit, are tests/c/test_templates_pointwise_vec.c's."""

import json
import os

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs

pytestmark = pytest.mark.gpu


def test_vectorized_pointwise_verifies_and_is_picked_when_faster():
    torch.manual_seed(0)
    x = torch.rand(4097, 4099, device="cuda") + 0.1  # 64 MiB, numel % 4 == 3
    with _jobs.bypass():
        expect = torch.rsqrt(x)
    res = kf.tune("aten::rsqrt", (x,), iterations=12, margin=-100, random_inputs=2)
    assert res["status"] == "inserted", res
    with open(os.path.join(res["job_dir"], "tree.json")) as f:
        nodes = json.load(f)["nodes"]

    def vectorized(n):
        with open(os.path.join(res["job_dir"], n["source_file"])) as f:
            return "kf_pack" in f.read()

    ok = [n for n in nodes if n["status"] in ("verified", "slower", "flagged")
          and n["origin"] == "cuda_pointwise"]
    vec = [n for n in ok if vectorized(n)]
    scalar = [n for n in ok if not vectorized(n)]
    assert vec, [(n["change"], n["status"], n["error"]) for n in nodes]
    best = min(ok, key=lambda n: n["latency_us"])
    if scalar and min(n["latency_us"] for n in vec) < min(n["latency_us"] for n in scalar):
        assert vectorized(best), (best, vec, scalar)
    print("vector best %.1f us, scalar best %s us" % (
        min(n["latency_us"] for n in vec),
        "%.1f" % min(n["latency_us"] for n in scalar) if scalar else "-"))
    got = torch.rsqrt(x)  # served
    torch.testing.assert_close(got, expect, atol=1e-5, rtol=1e-5)
