"""The LLM proposer end to end (forge/propose/proposer_llm.c): kernel_forge.tune(proposer="llm") against a
stub server on 127.0.0.1 (tests/stub_llm/server.py) that replays scripted replies in the OpenAI
and Anthropic wire formats. Every bad answer costs one node with the right status and error, the
search goes on, only a verified kernel is inserted, and the API key is never written anywhere."""

import json
import os
import subprocess
import sys
import time

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs

from conftest import ROOT

KEY = "sk-test-kforge-SECRET-4f2a9c"
SHAPE = (40, 520)  # no other test uses it: an inserted kernel must not leak into them
LAUNCH = ('{"entry": "kf_kernel", "grid": [1,1,1], "block": [1,1,1], "smem": 0, '
          '"args": ["const float*", "float*"]}')


def answer(body: str, launch: str = LAUNCH, lang: str = "c") -> str:
    return f"Here is the kernel.\n\n```{lang}\n{body}\n```\n\nLaunch record:\n```json\n{launch}\n```\n"


def relu_body(n: int, extra: str = "") -> str:
    return ("#include <stdint.h>\n#define KF_N %d\n"
            "void kf_kernel(const float *restrict x, float *restrict y)\n{\n"
            "    for (int64_t i = 0; i < KF_N; i++) {\n"
            "        float v = x[i];\n"
            "        y[i] = v > 0.0f ? v : (v != v ? v : 0.0f);\n"
            "    }\n%s}\n" % (n, extra))


def hardcoded_body(values) -> str:
    nums = ",".join(f"{v:.9e}f" for v in values)
    return ("#include <string.h>\nstatic const float kf_out[%d] = {%s};\n"
            "void kf_kernel(const float *x, float *y) { (void)x; memcpy(y, kf_out, sizeof kf_out); }\n"
            % (len(values), nums))


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """start(script, api) -> the request log path; sets KFORGE_LLM_* for the worker."""
    procs = []

    def start(script, api="openai", **env):
        sp = tmp_path / f"script{len(procs)}.json"
        sp.write_text(json.dumps(script))
        port_file = tmp_path / f"port{len(procs)}"
        p = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "stub_llm", "server.py"),
                              str(sp), str(port_file)])
        procs.append(p)
        for _ in range(200):
            if port_file.exists():
                break
            time.sleep(0.05)
        port = int(port_file.read_text())
        settings = {"KFORGE_LLM_URL": f"http://127.0.0.1:{port}", "KFORGE_LLM_API": api,
                    "KFORGE_LLM_MODEL": "stub-model", "KFORGE_LLM_API_KEY": KEY,
                    "KFORGE_LLM_RETRIES": "1", "KFORGE_LLM_BACKOFF_S": "0.05",
                    "KFORGE_LLM_TIMEOUT_S": "1.5", "KFORGE_LLM_CONNECT_TIMEOUT_S": "2"}
        settings.update(env)
        for k, v in settings.items():
            monkeypatch.setenv(k, v)
        return str(sp) + ".requests.jsonl"

    yield start
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


def tree_of(job_dir):
    with open(os.path.join(job_dir, "tree.json")) as f:
        return json.load(f)


def assert_key_nowhere(*dirs):
    for d in dirs:
        for root, _, files in os.walk(d):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    assert KEY.encode() not in f.read(), os.path.join(root, name)


def test_every_kind_of_bad_answer_costs_one_node(stub, tmp_path, monkeypatch):
    # every one of the 16 answers must be asked for: a roofline out of reach, so that the worker
    # never stops early because the first good kernel came within 10% of it
    monkeypatch.setattr(_jobs, "copy_bandwidth_gbs", lambda device, nbytes: 1e9)
    torch.manual_seed(7)
    x = torch.randn(*SHAPE)
    n = x.numel()
    with _jobs.bypass():
        expect = torch.relu(x)
    good, good2 = relu_body(n), relu_body(n).replace("i++", "i += 1")
    script = [
        {"text": answer(good), "usage": [1000, 200]},                       # 0 verified: wins
        {"text": answer("void kf_kernel(const float *x, float *y) { y[0] = nope; }")},  # 1
        {"text": answer(relu_body(n).replace("v > 0.0f ? v", "v > 0.0f ? -v"))},     # 2 wrong
        {"text": answer(relu_body(n, "    y[-1] = 1.0f; y[KF_N + 3] = 1.0f;\n"))},  # 3 oob
        {"text": answer("void kf_kernel(const float *x, float *y) { (void)x; (void)y; }")},  # 4
        {"text": answer("extern int cublasSgemm_v2(void);\n" + relu_body(n, "    cublasSgemm_v2();\n"))},
        {"text": answer(hardcoded_body(expect.flatten().tolist()))},        # 6 wrong on random
        {"text": "I would rather not write code today."},                   # 7 no code
        {"text": answer(good) + answer(good2)},                              # 8 two kernels
        {"text": answer(good, launch='{"entry": "kf_kernel", grid: [1,1,1]')},  # 9 bad record
        {"status": 200, "body": "this is {not json"},                       # 10 bad body
        {"big_mb": 10},                                                     # 11 too big
        {"status": 429, "headers": {"Retry-After": "1"}, "body": "slow down"},  # 12: retried
        {"text": answer(good2), "usage": [900, 100]},                       #     -> verified
        {"status": 500, "body": "boom"}, {"status": 500, "body": "boom"},   # 13
        {"delay_s": 3, "text": answer(good)}, {"delay_s": 3, "text": answer(good)},  # 14 timeout
        {"drop": True}, {"drop": True},                                     # 15 dropped
        {"text": "no code again"},
    ]
    log = stub(script)
    res = kf.tune("aten::relu", (x,), iterations=16, proposer="llm", margin=-1.0,
                  candidate_timeout=5.0, stagnation=0)  # every answer gets its node
    tree = tree_of(res["job_dir"])
    nodes = tree["nodes"]
    assert len(nodes) == 16, [(n["status"], n["error"][:80]) for n in nodes]
    st = [n["status"] for n in nodes]
    err = [n["error"] for n in nodes]
    assert all(n["proposer"] == "llm" for n in nodes)
    assert st[0] in ("verified", "flagged") and st[12] in ("verified", "flagged"), st
    assert st[1] == "compile_error" and "nope" in err[1]
    assert st[2] == "wrong"
    assert st[3] in ("oob", "crash"), (st[3], err[3])
    assert st[4] == "untouched"
    assert st[5] == "rejected" and "cublas" in err[5].lower()
    assert st[6] == "wrong", (st[6], err[6])
    assert st[7] == "rejected" and "no kernel" in err[7]
    assert st[8] == "rejected" and "2 code blocks" in err[8]
    assert st[9] == "rejected" and "launch record" in err[9]
    assert st[10] == "rejected" and "not JSON" in err[10]
    assert st[11] == "rejected" and "larger than" in err[11]
    assert nodes[12]["meta"]["attempts"] == 2
    assert st[13] == "rejected" and "HTTP 500" in err[13] and "2 attempts" in err[13]
    assert st[14] == "rejected" and "timed out" in err[14]
    assert st[15] == "rejected" and "dropped" in err[15], err[15]
    # only the verified kernel is inserted, and it is served correctly in this process
    if st[0] == "verified" or st[12] == "verified":
        assert res["status"] == "inserted" and res["served"]
        assert res["best_ms"] is not None
    else:
        assert res["cache_key"] is None
    torch.testing.assert_close(torch.relu(x), expect)
    # cost accounting: usage fields -> tokens; an unknown model costs $0 and says so
    llm = res["llm"]
    assert llm["model"] == "stub-model" and llm["calls"] == 16
    assert llm["input_tokens"] >= 1900 and llm["output_tokens"] >= 300
    assert llm["requests"] == 16 + 1 + 1 + 1 + 1  # 429, 500, slow and dropped were retried once
    with open(os.path.join(res["job_dir"], "llm_usage.json")) as f:
        assert json.load(f)["requests"] == llm["requests"]
    # the key was sent (as a bearer token), and is nowhere on disk
    with open(log) as f:
        reqs = [json.loads(line) for line in f]
    assert reqs[0]["path"] == "/v1/chat/completions"
    assert reqs[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    body = json.loads(reqs[1]["body"])
    assert body["model"] == "stub-model" and "aten::relu" in body["messages"][1]["content"]
    assert_key_nowhere(res["job_dir"], kf.cache_dir())


def test_anthropic_format_price_table_and_request_limit(stub, tmp_path):
    x = torch.randn(24, 333)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"stub-": {"input": 3.0, "output": 15.0}}))
    log = stub([{"text": answer(relu_body(x.numel())), "usage": [2000, 1000]},
                {"text": "nothing"}], api="anthropic", KFORGE_LLM_PRICES=str(prices))
    # gelu, as in test_mixed_tree_holds_both_proposers: a correct host relu can land within 10%
    # of the host's copy roofline and end the search before the request limit (seen in CI); the
    # model's relu is a wrong gelu, a node all the same
    res = kf.tune("aten::gelu", (x,), iterations=10, proposer="llm", insert=False,
                  llm_max_requests=2, margin=-1.0)
    assert "llm request limit" in res["stop_reason"], res
    nodes = tree_of(res["job_dir"])["nodes"]
    assert len(nodes) == 2 and nodes[0]["status"] == "wrong", nodes
    assert res["llm"]["cost_usd"] == pytest.approx((2000 * 3.0 + 1000 * 15.0 + 100 * 3 + 50 * 15) / 1e6)
    with open(log) as f:
        req = json.loads(f.readline())
    assert req["path"] == "/v1/messages" and req["headers"]["x-api-key"] == KEY
    assert "system" in json.loads(req["body"])
    assert_key_nowhere(res["job_dir"])


def test_mixed_tree_holds_both_proposers(stub):
    # gelu, not relu: a host relu can land within 10% of the host's copy roofline at its first
    # candidate and end the search before the model's turn; gelu's erf keeps it far from there.
    # The model's answer (a relu) is then a wrong gelu, still a node of the model's.
    x = torch.randn(16, 257)
    stub([{"text": answer(relu_body(x.numel()))}])
    res = kf.tune("aten::gelu", (x,), iterations=6, insert=False)  # default: mixed with an LLM
    nodes = tree_of(res["job_dir"])["nodes"]
    assert {n["proposer"] for n in nodes} == {"builtin", "llm"}, [n["proposer"] for n in nodes]
    assert res["proposer"] == "mixed"


def test_without_a_server_the_search_still_ends(monkeypatch):
    x = torch.randn(8, 129)
    monkeypatch.setenv("KFORGE_LLM_URL", "http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.setenv("KFORGE_LLM_MODEL", "stub-model")
    monkeypatch.setenv("KFORGE_LLM_RETRIES", "0")
    res = kf.tune("aten::relu", (x,), iterations=2, proposer="llm", insert=False)
    nodes = tree_of(res["job_dir"])["nodes"]
    assert [n["status"] for n in nodes] == ["rejected", "rejected"]
    assert "connect" in nodes[0]["error"]
    assert res["status"] == "no_correct_kernel"


def test_warmup_with_the_llm_proposer_prints_the_cost_table(stub, tmp_path):
    """`kforge warmup --proposer llm` against the stub: the model's kernel is verified, and the
    run ends with the cost table (requests, tokens, dollars per job)."""
    shape = (24, 301)  # no other test uses it
    n = shape[0] * shape[1]
    stub([{"text": answer(relu_body(n)), "usage": {"prompt_tokens": 1200, "completion_tokens": 300}}])
    script = tmp_path / "model.py"
    script.write_text("import torch\nx = torch.randn(%d, %d)\nfor _ in range(30):\n"
                      "    y = torch.relu(x)\n" % shape)
    env = {k: v for k, v in os.environ.items()}
    env["KFORGE_CACHE_DIR"] = str(tmp_path / "cache")
    env["KFORGE_LLM_PRICES"] = str(tmp_path / "prices.json")
    (tmp_path / "prices.json").write_text(json.dumps({"stub-model": {"input": 3.0, "output": 15.0}}))
    p = subprocess.run([sys.executable, "-m", "kernel_forge.cli", "warmup", "--no-check", "--proposer", "llm",
                        "--iterations", "2", "--ops", "aten::relu", "--json",
                        str(tmp_path / "w.json"), str(script)],
                       env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kforge warmup: LLM cost" in p.stdout, p.stdout
    (row,) = json.load(open(tmp_path / "w.json"))["rows"]
    # a scalar relu on 7k floats is about as fast as eager's: either outcome is honest here
    assert row["status"] in ("inserted", "no_faster_kernel"), row
    nodes = tree_of(row["job_dir"])["nodes"]
    assert nodes and all(n["proposer"] == "llm" for n in nodes)
    assert any(n["status"] in ("verified", "slower", "flagged") for n in nodes), nodes
    assert "stub-model" in p.stdout and "$" in p.stdout
    assert KEY not in p.stdout + p.stderr
    assert_key_nowhere(str(tmp_path / "cache"))


def test_a_chain_job_prompt_lists_its_members(stub, tmp_path):
    # the model gets chain jobs too: the members in order, each as eager computes it, and where
    # each reads its inputs from (the answer here is a plain relu: a wrong chain kernel)
    from kernel_forge import _chainjobs
    from test_chain_jobs import record_chain, rms

    x, w = torch.randn(24, 136), torch.randn(136)
    chain = record_chain(5, rms, x, w)
    log = stub([{"text": answer(relu_body(x.numel()))}])
    with _jobs.bypass():
        _chainjobs.write_chain_job(str(tmp_path / "job"), chain, [[x, w]], recorded=[False],
                                   bench_reps=5)
    _jobs.run_worker(str(tmp_path / "job"), extra_args=["--iterations", "1", "--proposer", "llm",
                                                        "--cache", str(tmp_path / "cache")])
    with open(log) as f:
        body = json.loads(json.loads(f.readline())["body"])
    prompt = "\n".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                       for m in body["messages"])
    assert "## The chain" in prompt and "these 6 PyTorch ops in order" in prompt, prompt[:3000]
    for line in ("0. `aten::pow.Tensor_Scalar`(input 0, exponent=2)",
                 "1. `aten::mean.dim`(member 0's output, dim=[-1], keepdim=True, dtype=None)",
                 "5. `aten::mul.Tensor`(member 4's output, input 1)"):
        assert line in prompt, (line, prompt[:3000])
    assert_key_nowhere(str(tmp_path / "job"))
