"""Chain jobs (kernel_forge/_chainjobs.py, forge/job/chain.c, forge/templates/*chain*.c): a
recorded chain's spec becomes a job folder (every member's eager output, the chain's eager time,
per-output tolerances), the worker finds a fused chain kernel that verifies every member's output
(outputs poisoned before each run) and inserts it as a "kforge::chain" entry with the chain
object; specs that lie are refused with a reason naming the member's op."""

import glob
import json
import os
import weakref

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _chainjobs, _jobs
from kernel_forge._jobs import NotTunable


def record_chain(steps, fn, *args):
    kf.reset_stats()
    kf.set_recording(True)
    try:
        for _ in range(steps):
            fn(*args)
    finally:
        kf.set_recording(False)
    chs = [c for c in kf.chains() if c.get("spec")]
    assert chs, kf.chains()
    return max(chs, key=lambda c: len(c["spec"]["members"]))


def rms(x, w):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * r) * w


def hf_rms(h, w):  # transformers' RMSNorm on a bf16 model: its casts are members too
    x = h.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * x.to(torch.bfloat16)


def gemma_rms_back_to_f32(h, w):  # RecurrentGemma: the norm's bf16 result read as float32
    x = h.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (x * (1.0 + w.float())).to(torch.bfloat16).to(torch.float32)


def add_gelu(x, b):
    return torch.nn.functional.gelu(x + b)


def mul_add_sigmoid(x, y, z):
    return torch.sigmoid(x * y + z)


def add_layer_norm(x, h, w, b):  # a residual add, then the block's norm
    return torch.nn.functional.layer_norm(x + h, (x.shape[-1],), w, b)


def add_softmax(x, mask):  # an attention mask added, then the softmax
    return torch.softmax(x + mask, -1)


def add_softmax_cast(x, mask):  # transformers' eager attention: the softmax in f32, cast back
    return torch.softmax(x + mask, -1, dtype=torch.float32).to(x.dtype)


def new_gelu_inner(x):  # GPT-2's tanh GELU but its last product: pow, scalar muls, adds, tanh
    return 1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0)))


def log_softmax_of_scaled(x):
    return torch.log_softmax(x * 2.0, -1)


def run(job_dir, cache):
    return _jobs.run_worker(str(job_dir), extra_args=["--iterations", "4", "--cache", str(cache)])


def write(tmp_path, chain, inputs, **kw):
    with _jobs.bypass():
        return _chainjobs.write_chain_job(str(tmp_path / "job"), chain, [inputs],
                                          recorded=[False], bench_reps=20,
                                          search={"margin": -100.0}, **kw)


def nodes(job_dir):
    with open(os.path.join(job_dir, "tree.json")) as f:
        return json.load(f)["nodes"]


# name: (fn, its inputs, members, (head inputs, externals), the job's outputs)
CHAINS = {
    "rmsnorm": (rms, lambda: (torch.randn(256, 512), torch.randn(512)), 6, (1, 1), 6),
    "rmsnorm_bf16_casts": (hf_rms, lambda: (torch.randn(256, 512).bfloat16(),
                                            torch.randn(512).bfloat16()), 8, (1, 1), 8),
    "rmsnorm_bf16_back_to_f32": (gemma_rms_back_to_f32, lambda: (torch.randn(256, 512).bfloat16(),
                                                             torch.randn(512).bfloat16()), 11, (1, 1), 11),
    "add_gelu": (add_gelu, lambda: (torch.randn(4, 8, 32), torch.randn(32)), 2, (2, 0), 2),
    "mul_add_sigmoid": (mul_add_sigmoid, lambda: (torch.randn(16, 24), torch.randn(16, 24),
                                                  torch.randn(24)), 3, (2, 1), 3),
    # the norm's mean and rstd are the job's last outputs
    "add_layer_norm": (add_layer_norm, lambda: (torch.randn(8, 64, 256), torch.randn(8, 64, 256),
                                                torch.randn(256), torch.randn(256)), 2, (2, 2), 4),
    "add_softmax": (add_softmax, lambda: (torch.randn(8, 64, 256), torch.randn(256)), 2, (2, 0), 2),
    # the cast back after the softmax: its epilogue
    "add_softmax_cast": (add_softmax_cast, lambda: (torch.randn(8, 64, 256).bfloat16(),
                                                    torch.randn(256).bfloat16()), 4, (2, 0), 4),
    # on bf16: pow rounds x * x first, the muls take their Python numbers unnarrowed
    "new_gelu_bf16": (new_gelu_inner, lambda: (torch.randn(64, 768).bfloat16(),), 6, (1, 0), 6),
    # a Swin window's attention: rows of 49 (cuda_chain's warp per row)
    "add_softmax_window": (add_softmax, lambda: (torch.randn(16, 3, 49, 49), torch.randn(49, 49)),
                           2, (2, 0), 2),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chain_job_verifies_and_inserts_a_chain_entry(name, tmp_path):
    fn, make, n_members, (H, E), n_out = CHAINS[name]
    torch.manual_seed(0)
    args = make()
    chain = record_chain(5, fn, *args)
    spec = chain["spec"]
    assert len(spec["members"]) == n_members and (spec["n_head_inputs"], spec["n_ext"]) == (H, E)
    job = write(tmp_path, chain, list(args))
    assert job["op"] == "kforge::chain" and job["sig_hex"] == spec["sig_hex"]
    assert len(job["outputs"]) == n_out and len(job["output_tol"]) == n_out
    assert [o["member"] for o in job["outputs_layout"]] == \
        list(range(n_members)) + [n_members - 1] * (n_out - n_members)
    assert all(s["name"].startswith("m") and "." in s["name"] for s in job["scalars"])
    # case outputs are every member's eager outputs, in order (the example case: the real
    # values); the last member's first output is the chain's result
    case = job["cases"][0]
    with _jobs.bypass():
        want = fn(*args)
    last = torch.frombuffer(bytearray((tmp_path / "job" / "cases" / case["outputs"][n_members - 1])
                                      .read_bytes()), dtype=want.dtype)
    assert torch.equal(last, want.reshape(-1))
    if name == "rmsnorm_bf16_casts":  # the weight mul reads the bf16 cast after the mean
        assert job["output_tol"][7][1] == 2 ** -6 and job["output_tol"][6][1] == 1e-2, \
            job["output_tol"]
    if name == "rmsnorm_bf16_back_to_f32":  # a float32 copy of a bf16 value one ulp apart
        assert job["output_tol"][-1][1] == 2 ** -6 and job["output_tol"][-2][1] == 1e-2, \
            job["output_tol"]
    if name == "rmsnorm":  # downstream of the mean: the reduction's tolerance
        mean_tol = _jobs.tolerance("aten::mean.dim", torch.float32)
        assert job["output_tol"][5][1] >= mean_tol[1]
        assert job["output_tol"][0] == list(_jobs.tolerance("aten::pow.Tensor_Scalar",
                                                            torch.float32))
    res = run(tmp_path / "job", tmp_path / "cache")
    assert res["status"] == "inserted", res
    ok = [n for n in nodes(str(tmp_path / "job")) if n["status"] in ("verified", "slower")]
    assert ok and all(n["meta"]["template"] == "host_chain" for n in ok), ok
    man = [json.load(open(p)) for p in glob.glob(str(tmp_path / "cache" / "**" / "*.json"),
                                                 recursive=True)]
    entries = [m for m in man if m.get("op") == "kforge::chain"]
    assert entries, man
    assert entries[0]["chain"]["members"] == spec["members"]


def test_spec_that_lies_about_inputs_is_refused(tmp_path):
    x, w = torch.randn(8, 64), torch.randn(64)
    chain = record_chain(5, rms, x, w)
    bad = json.loads(json.dumps(chain))
    bad["spec"]["members"][3]["inputs"] = [["member", 0, 0]]  # rsqrt of x^2, not of mean + eps
    with pytest.raises(NotTunable, match=r"chain member 3 \(aten::rsqrt\): input 'self' is wired"):
        write(tmp_path, bad, [x, w])
    bad = json.loads(json.dumps(chain))
    bad["spec"]["members"][2]["inputs"] = [["member", 4, 0]]  # a later member
    with pytest.raises(NotTunable, match=r"chain member 2 \(aten::add.Tensor\): inputs\[0\]"):
        write(tmp_path, bad, [x, w])
    bad = json.loads(json.dumps(chain))
    bad["spec"]["members"][1]["op"] = "aten::sum.dim_IntList"  # not what was recorded
    with pytest.raises(NotTunable, match=r"chain member 1 \(aten::sum.dim_IntList\)"):
        write(tmp_path, bad, [x, w])


def gpt2_gelu(x):  # 0.5 * x is read again by the last member
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))


def test_eager_time_lets_go_of_each_output_after_its_last_reader():
    # as the model's temporaries go: held to the run's end, GPT-2's GELU was timed 1.3x slower
    # on the host than the model runs it, and its chain kernel inserted where it loses
    x = torch.randn(64, 128)
    chain = record_chain(5, gpt2_gelu, x)
    spec = chain["spec"]
    members = [_chainjobs._Member(k, m, key)
               for k, (m, key) in enumerate(zip(spec["members"], _chainjobs.spec_keys(chain)))]
    assert len(members) == 8
    made, alive_at = [], []  # each output (weakly); per call, which earlier ones are alive
    for mb in members:
        def fn(*a, f=mb.fn, **kw):
            alive_at.append([w() is not None for w in made])
            o = f(*a, **kw)
            made.append(weakref.ref(o))
            return o
        fn._schema = mb.fn._schema
        mb.fn = fn
    last = {}  # output -> the last member that reads it
    for m, sm in enumerate(spec["members"]):
        for r in sm["inputs"]:
            if r[0] == "member":
                last[r[1]] = m
    with _jobs.bypass():
        run = _chainjobs.eager_runner(spec, members, [x])
        made.clear(), alive_at.clear()
        run()
    assert len(alive_at) == 8
    for m, alive in enumerate(alive_at):
        assert alive == [last.get(k, 8) >= m for k in range(m)], (m, alive)
    assert alive_at[7] == [True] + [False] * 5 + [True]  # 0.5 * x and the tanh's + 1
    assert all(w() is None for w in made)  # no argument held until the next run


def test_chain_of_an_op_the_templates_do_not_fuse_says_which(tmp_path):
    x = torch.randn(8, 32)
    chain = record_chain(5, log_softmax_of_scaled, x)
    assert [m["op"] for m in chain["spec"]["members"]] == ["aten::mul.Tensor", "aten::_log_softmax"]
    write(tmp_path, chain, [x])
    res = run(tmp_path / "job", tmp_path / "cache")
    assert res["status"] == "no_template"
    assert "member 1 (aten::_log_softmax): not an op the chain templates fuse" in res["detail"]


def test_indices_a_member_computes_are_refused_with_the_reason(tmp_path):
    """OPT's learned positions, `embedding(weight, positions + 2)`: random inputs would index
    out of range, so the job is refused naming the member (not eager's IndexError later)."""
    w, pos = torch.randn(66, 32), torch.arange(64).repeat(2, 1)
    chain = record_chain(5, lambda p: torch.nn.functional.embedding(p + 2, w), pos)
    assert [m["op"] for m in chain["spec"]["members"]] == ["aten::add.Tensor", "aten::embedding"]
    inputs = [pos] + [w] * chain["spec"]["n_ext"]
    with pytest.raises(NotTunable, match=r"member 1 \(aten::embedding\) takes its indices from "
                                         r"member 0, which random inputs cannot keep in range"):
        write(tmp_path, chain, inputs)


def test_indices_from_outside_stay_in_range_in_random_cases(tmp_path):
    """FNet's embeddings: the token-type lookup joins the word lookup's chain, its indices an
    external; random cases draw them below its table's rows (here 3), as eager needs."""
    w1, w2 = torch.randn(1000, 32), torch.randn(3, 32)
    ids, tt = torch.randint(0, 1000, (2, 16)), torch.zeros(2, 16, dtype=torch.long)

    def embed(i, t):
        return torch.nn.functional.embedding(i, w1) + torch.nn.functional.embedding(t, w2)

    chain = record_chain(5, embed, ids, tt)
    members = chain["spec"]["members"]
    assert [m["op"] for m in members] == ["aten::embedding", "aten::embedding", "aten::add.Tensor"]
    assert members[1]["inputs"] == [["ext", 0], ["ext", 1]]  # the second table and its indices
    job = write(tmp_path, chain, [w1, ids, w2, tt], random_inputs=3)
    assert [c["kind"] for c in job["cases"]].count("random") == 3
    for c in job["cases"]:
        idx = torch.from_file(str(tmp_path / "job" / "cases" / c["inputs"][3]),
                              size=tt.numel(), dtype=torch.long)
        assert 0 <= int(idx.min()) and int(idx.max()) < 3, c["kind"]


def test_a_layer_norm_after_ten_members_has_too_many_outputs(tmp_path):
    def long_chain(x, w, b):  # 10 pointwise members, then the norm's 3 outputs: 13 > 12
        y = ((((x * 1.1 + 1.0) * 0.9) - 0.5) * 1.2) + 0.3
        y = ((((y * 1.1 + 1.0) * 0.9) - 0.5))
        return torch.native_layer_norm(y, [64], w, b, 1e-5)

    x, w, b = torch.randn(8, 64), torch.randn(64), torch.randn(64)
    chain = record_chain(5, long_chain, x, w, b)
    assert len(chain["spec"]["members"]) == 11
    with pytest.raises(NotTunable, match=r"13 outputs; a chain job holds at most 12"):
        write(tmp_path, chain, [x, w, b])


def test_no_correct_kernel_says_which_member_differed(tmp_path):
    x, w = torch.randn(8, 64), torch.randn(64)
    chain = record_chain(5, rms, x, w)
    job = write(tmp_path, chain, [x, w])
    # eager's mean + eps (member 2) as the example case holds it, made wrong: nothing matches
    path = tmp_path / "job" / "cases" / job["cases"][0]["outputs"][2]
    v = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.float32)
    path.write_bytes((v + 1.0).numpy().tobytes())
    res = run(tmp_path / "job", tmp_path / "cache")
    assert res["status"] == "no_correct_kernel", res
    assert res["detail"].startswith(f"none of {res['iterations']} candidates was correct ("), res
    assert "wrong" in res["detail"] and "output 2 (member 2, aten::add.Tensor): " in res["detail"], res
    # kforge warmup's table says why, shortened to fit its line
    from kernel_forge import _warmup

    row = {"op": "kforge::chain", "signature": "chain: pow -> mean -> add", "share": 1.0,
           "eager_us": res["eager_us"], "best_us": None, "speedup": None, "roofline_pct": None,
           "iterations": res["iterations"], "wall_s": 1.0, "status": res["status"],
           "detail": res["detail"]}
    line = _warmup.table([row]).splitlines()[-1]
    assert "no_correct_kernel: none of 4 candidates was correct (4 wrong); node 0" in line, line


def test_an_eval_batch_norm_and_its_activation_verify_bit_for_bit(tmp_path):
    # running variances near zero: invstd near 1 / sqrt(eps) magnifies any rounding the kernel
    # does unlike eager's (its multiply-adds fused), which the tolerance would not forgive
    bn = torch.nn.BatchNorm2d(16).eval()
    with torch.no_grad():
        bn.running_var.uniform_(0, 1e-6)
        bn.running_mean.uniform_(-3, 3)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    x = torch.randn(4, 16, 12, 12) * 3
    with torch.no_grad():
        chain = record_chain(5, lambda x: torch.relu(bn(x)), x)
    assert [m["op"] for m in chain["spec"]["members"]] == ["aten::native_batch_norm", "aten::relu"]
    write(tmp_path, chain, [x, bn.weight.detach(), bn.bias.detach(), bn.running_mean, bn.running_var])
    res = run(tmp_path / "job", tmp_path / "cache")
    assert res["status"] in ("inserted", "found", "no_faster_kernel"), res
    tree = nodes(tmp_path / "job")
    assert tree and all(n["status"] not in ("wrong", "untouched") for n in tree), tree


def test_a_chain_no_template_binds_says_which_member_and_why(tmp_path):
    # a softmax over the first dim: the chain templates take a softmax of the last dim only
    x, b = torch.randn(24, 40), torch.randn(40)
    chain = record_chain(5, lambda x, b: torch.softmax(x + b, 0), x, b)
    write(tmp_path, chain, [x, b])
    res = run(tmp_path / "job", tmp_path / "cache")
    assert res["status"] == "no_template" and "member 1 (aten::_softmax)" in res["detail"], res
    from kernel_forge import _warmup

    row = {"op": "kforge::chain", "signature": "chain: add -> _softmax", "share": 1.0,
           "eager_us": res["eager_us"], "best_us": None, "speedup": None, "roofline_pct": None,
           "iterations": 0, "wall_s": 0.0, "status": res["status"], "detail": res["detail"]}
    line = _warmup.table([row]).splitlines()[-1]
    assert "no_template: " in line and "member 1 (aten::_softmax)" in line, line


def test_worker_refuses_a_job_whose_sig_hex_is_another_chains(tmp_path):
    x, b = torch.randn(4, 8, 32), torch.randn(32)
    chain = record_chain(5, add_gelu, x, b)
    write(tmp_path, chain, [x, b])
    path = tmp_path / "job" / "job.json"
    job = json.loads(path.read_text())
    job["sig_hex"] = job["sig_hex"][:-2] + ("01" if job["sig_hex"][-2:] != "01" else "02")
    path.write_text(json.dumps(job))
    with pytest.raises(kf.KernelForgeError, match="canonical bytes"):
        run(tmp_path / "job", tmp_path / "cache")


# a Llama's first RMSNorm at prefill, [4, 1024, 2048] bf16: no candidate verified on the H200
# (session 8) where [256, 512] does; too large for the CPU suite
WIDE = {"rmsnorm_bf16_casts_wide": (hf_rms, lambda: (torch.randn(4, 1024, 2048).bfloat16(),
                                                     torch.randn(2048).bfloat16()), 8, (1, 1), 8),
        # Mistral's attention at prefill (2 x 16 heads x 1024 x 1024): rows of 1024 in registers
        "add_softmax_cast_wide": (add_softmax_cast, lambda: (
            torch.randn(2, 16, 1024, 1024).bfloat16(), torch.randn(1, 1, 1024, 1024).bfloat16()),
            4, (2, 0), 4),
        # DeiT-B's residual add and norm in bf16: rows of 768 kept in registers as packs of 8
        "add_layer_norm_bf16_wide": (add_layer_norm, lambda: (
            torch.randn(64, 197, 768).bfloat16(), torch.randn(64, 197, 768).bfloat16(),
            torch.randn(768).bfloat16(), torch.randn(768).bfloat16()), 2, (2, 2), 4),
        # PVT-v2's first stage: rows of 32 bf16 channels, 4 packs, a group of 4 lanes per row
        "add_layer_norm_bf16_short": (add_layer_norm, lambda: (
            torch.randn(64, 3136, 32).bfloat16(), torch.randn(64, 3136, 32).bfloat16(),
            torch.randn(32).bfloat16(), torch.randn(32).bfloat16()), 2, (2, 2), 4),
        # GPT-2's MLP activation at [8, 512, 3072]: no candidate verified on the H200 (session 10)
        "new_gelu_bf16_wide": (new_gelu_inner, lambda: (torch.randn(8, 512, 3072).bfloat16(),),
                               6, (1, 0), 6)}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CHAINS) + sorted(WIDE))
def test_cuda_chain_job_verifies_and_inserts(name, tmp_path):
    fn, make, _, _, n_out = {**CHAINS, **WIDE}[name]
    torch.manual_seed(0)
    args = [a.cuda() for a in make()]
    chain = record_chain(5, fn, *args)
    job = write(tmp_path, chain, args)
    assert job["backend"] == "nvrtc" and len(job["outputs"]) == n_out
    res = run(tmp_path / "job", tmp_path / "cache")
    assert res["status"] == "inserted", res
    ok = [n for n in nodes(str(tmp_path / "job")) if n["status"] in ("verified", "slower")]
    assert ok and all(n["meta"]["template"] == "cuda_chain" for n in ok), ok
    if "layer_norm" in name:  # every layout the template renders for a norm computes it
        bad = [(n["status"], n["meta"]) for n in nodes(str(tmp_path / "job"))
               if n["status"] in ("wrong", "untouched", "input_written", "oob", "crash", "compile_error")]
        assert not bad, bad

WARMUP_SCRIPT = (
    "import torch\n"
    "class RMS(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.w = torch.nn.Parameter(torch.randn(256))\n"
    "    def forward(self, x):\n"
    "        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
    "        return (x * r) * self.w\n"
    "m = RMS().requires_grad_(False)\n"
    "x = torch.randn(64, 256)\n"
    "for _ in range(30):\n"
    "    y = m(x)\n")


def test_warmup_tunes_hot_chains_by_default(tmp_path):
    from conftest import run_python

    script = tmp_path / "model.py"
    script.write_text(WARMUP_SCRIPT)
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache")}
    p = run_python(["-m", "kernel_forge.cli", "warmup", "--iterations", "3", "--max-jobs", "1", "--no-check",
                    "--time-budget", "300", "--json", str(tmp_path / "w.json"), str(script)], env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(tmp_path / "w.json") as f:
        rows = json.load(f)["rows"]
    chain_rows = [r for r in rows if r["op"] == "kforge::chain"]
    assert [r["signature"] for r in chain_rows] == [
        "chain: pow -> mean -> add -> rsqrt -> mul -> mul"], rows
    (row,) = chain_rows
    assert row["status"] in ("inserted", "no_faster_kernel"), row
    assert "chain: pow -> mean" in p.stdout  # the table's chain row
    with open(os.path.join(row["job_dir"], "job.json")) as f:
        job = json.load(f)
    kinds = [c["kind"] for c in job["cases"]]
    assert kinds.count("recorded") == 3 and kinds.count("random") == 3
    assert job["op"] == "kforge::chain" and len(job["outputs"]) == 6
    assert row["bytes_moved"] == job["bytes_moved"] > 0  # the reports' bytes per chain

    p = run_python(["-m", "kernel_forge.cli", "warmup", "--iterations", "2", "--max-jobs", "1", "--no-check",
                    "--no-chains", "--json", str(tmp_path / "w2.json"), str(script)], env,
                   timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(tmp_path / "w2.json") as f:
        assert not [r for r in json.load(f)["rows"] if r["op"] == "kforge::chain"]
