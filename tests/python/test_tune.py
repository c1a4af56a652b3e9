"""The forge on CPU (host C backend): kernel_forge.tune runs the MCTS in the worker process,
verified winners land in the cache and are served; sabotaged candidates cost only their nodes;
the search is reproducible; online tuning and `kforge warmup` end with served kernels."""

import json
import os
import time

import pytest
import torch
import torch.nn.functional as F

import kernel_forge as kf
from kernel_forge import _jobs

from conftest import ROOT, check_job_cases, run_python

# Shapes no other test uses (a served kernel must not leak into other tests), big enough that the
# eager call's own dispatch cost (a few us, which the worker's direct kernel timing does not pay)
# does not decide the comparison.
SOFTMAX = (384, 1536)
LAYER_NORM = (256, 1024)
GELU = (512, 1031)


def tree_of(job_dir):
    with open(os.path.join(job_dir, "tree.json")) as f:
        return json.load(f)


def statuses(job_dir):
    return [n["status"] for n in tree_of(job_dir)["nodes"]]


def check_result(res, iterations):
    assert res["status"] in ("inserted", "no_faster_kernel"), res
    assert res["iterations"] <= iterations
    assert res["eager_ms"] > 0 and res["best_ms"] > 0
    tree = tree_of(res["job_dir"])
    verified = [n for n in tree["nodes"] if n["status"] in ("verified", "slower", "flagged")]
    assert verified, tree["nodes"]
    for n in tree["nodes"]:  # every node says where it came from, and what changed
        assert n["proposer"] == "builtin" and n["change"]
        assert os.path.exists(os.path.join(res["job_dir"], n["source_file"]))
    if res["status"] == "inserted":
        assert res["cache_key"] and res["speedup"] >= 1.0
        assert res["served"], "the inserted kernel is served in this process"
    else:
        assert res["cache_key"] is None


@pytest.mark.parametrize("case", ["softmax", "layer_norm", "gelu"])
def test_tune_finds_verified_kernels_and_serves_winners(case):
    torch.manual_seed(0)
    if case == "softmax":
        x = torch.randn(*SOFTMAX)
        op, args, kwargs = "aten::_softmax", (x, -1, False), {}
        ref = lambda: torch.softmax(x, -1)  # noqa: E731
    elif case == "layer_norm":
        x, w, b = torch.randn(*LAYER_NORM), torch.randn(LAYER_NORM[1]), torch.randn(LAYER_NORM[1])
        op, args, kwargs = "aten::native_layer_norm", (x, [LAYER_NORM[1]], w, b, 1e-5), {}
        ref = lambda: F.layer_norm(x, [LAYER_NORM[1]], w, b, 1e-5)  # noqa: E731
    else:
        x = torch.randn(*GELU)
        op, args, kwargs = "aten::gelu", (x,), {"approximate": "tanh"}
        ref = lambda: F.gelu(x, approximate="tanh")  # noqa: E731
    with _jobs.bypass():
        expect = ref()
    res = kf.tune(op, args, iterations=12, kwargs=kwargs)
    check_result(res, 12)
    got = ref()  # through the plugin: the kernel when one was inserted, else eager
    torch.testing.assert_close(got, expect, atol=1e-4, rtol=1e-4)
    row = next(r for r in kf.stats() if r["key"] == kf.signature_key(op, *args, **kwargs))
    assert (row["served"] > 0) == (res["status"] == "inserted")


def test_sabotaged_candidates_fail_their_nodes_only():
    x = torch.randn(96, 700)
    res = kf.tune("aten::_softmax", (x, -1, False), iterations=10, insert=False,
                  candidate_timeout=2.0,
                  _worker_args=["--sabotage", "crash,hang,oob", "--sabotage-every", "2"])
    st = statuses(res["job_dir"])
    assert len(st) == 10
    assert "crash" in st and "timeout" in st, st
    nodes = tree_of(res["job_dir"])["nodes"]
    sab = [n for n in nodes if n["change"].startswith("sabotaged")]
    assert len(sab) == 5
    for n in sab:  # every sabotaged candidate failed, with the reason recorded
        assert n["status"] in ("crash", "timeout", "oob"), n
        assert n["error"]
    # the good candidates around them were still evaluated
    assert any(s in ("verified", "slower", "flagged") for s in st)
    assert torch.allclose(torch.softmax(x, -1), torch.softmax(x.double(), -1).float())


def test_same_seed_same_tree():
    x = torch.randn(64, 333)
    a = kf.tune("aten::_log_softmax", (x, -1, False), iterations=10, insert=False, seed=7)
    b = kf.tune("aten::_log_softmax", (x, -1, False), iterations=10, insert=False, seed=7,
                _worker_args=["--timings-from", a["job_dir"]])
    ta, tb = tree_of(a["job_dir"])["nodes"], tree_of(b["job_dir"])["nodes"]
    shape = lambda ns: [(n["id"], n["parent"], n["origin"], n["change"], n["source_hash"],  # noqa: E731
                         n["status"]) for n in ns]
    assert shape(ta) == shape(tb)
    assert all(n["latency_replayed"] for n in tb if n["status"] in ("verified", "slower"))


def stagnation_stop(nodes: list[dict], stall: int) -> int | None:
    """How many candidates a search with stagnation `stall` evaluates of the sequence `nodes`
    (the worker's rule: `stall` in a row that neither beat the best by 1% nor started a
    template); None: it would not stop within them."""
    best = ref = gain = start = None
    for n in nodes:
        i = n["id"]
        if n["change"].startswith("start: ") and "(random knobs)" not in n["change"]:
            start = i
        if n["status"] in ("verified", "slower", "flagged") and (best is None or n["latency_us"] < best):
            best = n["latency_us"]
            if ref is None or best < ref * 0.99:  # a gain of 1% over the last one counted
                ref, gain = best, i
        if (i + 1 if gain is None else i - gain) >= stall and \
                (i + 1 if start is None else i - start) >= stall:
            return i + 1
    return None


def test_a_search_stops_when_it_stagnates():
    x = torch.randn(48, 777)
    a = kf.tune("aten::_log_softmax", (x, -1, False), iterations=30, insert=False, seed=3,
                stagnation=0)
    ta = tree_of(a["job_dir"])["nodes"]
    want = stagnation_stop(ta, 4)
    assert want is not None and want < len(ta), [(n["change"], n["latency_us"]) for n in ta]
    b = kf.tune("aten::_log_softmax", (x, -1, False), iterations=30, insert=False, seed=3,
                stagnation=4, _worker_args=["--timings-from", a["job_dir"]])
    assert b["stop_reason"].startswith("stagnation (4 candidates"), b
    tb = tree_of(b["job_dir"])["nodes"]
    assert len(tb) == want and b["iterations"] == want
    assert [n["source_hash"] for n in tb] == [n["source_hash"] for n in ta[:want]]


# Job inputs: a strided slice with a storage offset and a broadcast, bool and int tensors, and an
# op that writes its first argument (whose case file holds the values from before the call).
JOB_CALLS = {
    "strided_f32": lambda: ("aten::mul.Tensor", (torch.randn(100, 64)[10:50, ::2],
                                                 torch.randn(32))),
    "bool": lambda: ("aten::mul.Tensor", (torch.rand(24, 40) > 0.5,
                                          (torch.rand(40, 24) > 0.5).t())),
    "int32": lambda: ("aten::add.Tensor", (torch.randint(-9, 9, (40, 24), dtype=torch.int32).t(),
                                           torch.randint(-9, 9, (24, 40), dtype=torch.int32))),
    "in_place": lambda: ("aten::add_.Tensor", (torch.randn(24, 40), torch.randn(40))),
}


def write_example_job(job_dir, op, args, seed=0):
    key = kf.signature_key(op, *[_jobs.clone_exact(a) for a in args])  # add_ writes its first
    with _jobs.bypass():
        return _jobs.write_job(str(job_dir), key, [(list(args), {})], recorded=[False], seed=seed,
                               bench_reps=2)


@pytest.mark.parametrize("case", sorted(JOB_CALLS))
def test_job_cases_are_spans_of_the_inputs_and_eager_outputs(case, tmp_path):
    torch.manual_seed(0)
    op, args = JOB_CALLS[case]()
    before = [t.clone() for t in args]
    job = write_example_job(tmp_path, op, args, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(args, before))  # the caller's tensors as they were
    check_job_cases(str(tmp_path), args)
    assert [c["kind"] for c in job["cases"]] == ["example"] + ["random"] * 3
    # random inputs differ between variants, from the example, and between a case's tensors
    files = [(tmp_path / "cases" / f).read_bytes() for c in job["cases"] for f in c["inputs"]]
    assert len(set(files)) == len(files)
    if args[0].dtype.is_floating_point:  # scales 1, 100 and 0.01 in turn
        peak = [torch.frombuffer(bytearray((tmp_path / "cases" / c["inputs"][0]).read_bytes()),
                                 dtype=args[0].dtype).abs().max().item() for c in job["cases"][1:]]
        assert 0.5 < peak[0] < 10 and peak[1] > 50 and peak[2] < 0.1, peak


def test_triangular_solve_jobs_draw_well_conditioned_systems(tmp_path):
    """Random triangular systems of order 64 with N(0, 1) entries have solutions growing like
    2^64, where eager and any kernel differ past every tolerance: a job's random cases keep them
    as conditioned as a model's (off-diagonal within 1/n, diagonal magnitude 1 to 2)."""
    torch.manual_seed(0)
    a = torch.randn(3, 64, 64).tril(-1) / 64 + torch.eye(64)  # Qwen 3.5's: unit lower
    b = torch.randn(3, 64, 32)
    kw = {"upper": False, "unitriangular": True}
    op = "aten::linalg_solve_triangular"
    key = kf.signature_key(op, a, b, **kw)
    with _jobs.bypass():
        job = _jobs.write_job(str(tmp_path), key, [([a, b], kw)], recorded=[False], seed=1,
                              bench_reps=2)
    assert job["atol"] == job["rtol"] == 1e-4  # an accumulating op's fp32 tolerance
    assert [c["kind"] for c in job["cases"]] == ["example"] + ["random"] * 3
    read = lambda f: torch.frombuffer(bytearray((tmp_path / "cases" / f).read_bytes()),  # noqa: E731
                                      dtype=torch.float32)
    for c, scale in zip(job["cases"][1:], (1.0, 100.0, 0.01)):
        m = read(c["inputs"][0]).view(3, 64, 64)
        d = m.diagonal(dim1=-2, dim2=-1).abs()
        assert d.min() >= 1 and d.max() <= 2
        assert m.tril(-1).abs().max() < 5 / 64
        x = read(c["outputs"][0])
        assert torch.isfinite(x).all() and x.abs().max() < 20 * scale, (scale, x.abs().max())
        assert read(c["inputs"][1]).abs().max() > scale  # B keeps its scale


def test_same_seed_same_job_files(tmp_path):
    x, y = torch.randn(48, 40)[:, 3:35], torch.randn(32)

    def files(d, seed):
        job = write_example_job(d, "aten::mul.Tensor", (x, y), seed)
        return job, {f: (d / "cases" / f).read_bytes() for c in job["cases"]
                     for f in c["inputs"] + c["outputs"]}

    (ja, a), (jb, b), (_, c) = (files(tmp_path / d, s) for d, s in [("a", 5), ("b", 5), ("c", 6)])
    assert a == b and ja["cases"] == jb["cases"] and ja["search"] == jb["search"]
    # another seed: the same example case, other random ones
    assert all((a[f] == c[f]) == f.startswith("c0_") for f in a)


def test_a_tiny_host_op_is_judged_with_the_eager_call_floor():
    # the worker times a host kernel as a bare call (a tenth of a us here), eager pays an op
    # overload's call and the dispatcher (a few us): the bare ratio looks too fast to trust, the
    # ratio with the call floor added back does not, and the plugin serves it
    x = torch.randn(1061).bfloat16()
    res = kf.tune("aten::gt.Scalar", (x, 0.25), iterations=2, random_inputs=1)
    with open(os.path.join(res["job_dir"], "job.json")) as f:
        job = json.load(f)
    assert 0 < job["call_floor_us"] <= job["eager_us"], job
    nodes = tree_of(res["job_dir"])["nodes"]
    best = min(n["latency_us"] for n in nodes if n["status"] == "verified")
    assert best * 10 < job["eager_us"] < (best + job["call_floor_us"]) * 10, (best, job)
    assert res["status"] == "inserted" and res["served"], res
    with _jobs.bypass():
        expect = torch.gt(x, 0.25)
    assert torch.equal(torch.gt(x, 0.25), expect)


def test_tune_leaves_an_in_place_example_as_it_was():
    x, y = torch.randn(24, 40), torch.randn(40)
    before = x.clone()
    res = kf.tune("aten::add_.Tensor", (x, y), iterations=2, insert=False)
    assert res["cache_key"] is None and res["job_dir"], res
    assert torch.equal(x, before)  # the signature probe and the job ran on copies


def test_tune_refuses_what_it_cannot_tune():
    x = torch.randn(4, 4)
    with pytest.raises(kf.KernelForgeError, match="no tensor"):
        kf.tune("aten::_softmax", (1, -1, False))
    with pytest.raises(kf.KernelForgeError, match="backend"):
        kf.tune("aten::_softmax", (x, -1, False), backend="nvrtc")
    # a tensor list with an element no signature describes exactly (test_tune_cat.py: more)
    nine = [torch.randn([1] * 8 + [2]), torch.randn([1] * 8 + [3])]
    with pytest.raises(kf.KernelForgeError, match="opaque"):
        kf.tune("aten::cat", (nine, -1), iterations=2, insert=False)


def test_roofline_bytes_are_what_the_op_must_move():
    x, y = torch.randn(64, 48), torch.randn(64, 48)
    b16 = torch.randn(64, 48, dtype=torch.bfloat16)
    n = x.numel()
    moved = lambda op, *a: _jobs.bytes_moved(*_jobs.describe(kf.signature_key(op, *a)))  # noqa: E731
    assert moved("aten::add.Tensor", x, y) == 3 * 4 * n
    assert moved("aten::add_.Tensor", x, y) == 3 * 4 * n  # x read, y read, x written
    assert moved("aten::copy_", x, b16) == 2 * n + 4 * n  # x is written only
    assert moved("aten::add.Tensor", x[:, :24], y[:, :24]) == 3 * 4 * n // 2  # not the span
    assert moved("aten::add.Tensor", x, y[:1].expand(64, 48)) == 4 * (n + 48 + n)
    # a gather reads one source element per output element: the roofline of a decode step's
    # embedding is its rows, not the table (which its captures hold: the footprint)
    table, ids = torch.randn(5000, 64, dtype=torch.bfloat16), torch.randint(0, 5000, (4, 1))
    d = _jobs.describe(kf.signature_key("aten::embedding", table, ids))
    assert _jobs.bytes_moved(*d) == 4 * 8 + 2 * (4 * 64 * 2)
    assert _jobs.footprint_bytes(*d) == 4 * 8 + 5000 * 64 * 2 + 4 * 64 * 2
    idx = torch.tensor([1, 5, 7])
    assert moved("aten::index_select", x, 0, idx) == 3 * 8 + 2 * (3 * 48 * 4)
    g = torch.randint(0, 48, (64, 2))
    assert moved("aten::gather", x, 1, g) == 128 * 8 + 2 * (128 * 4)
    # what a later call reading the first output reads (a chain's member): an in-place op's
    # is its destination
    first = lambda op, *a: _jobs.first_output_bytes(*_jobs.describe(kf.signature_key(op, *a)))  # noqa: E731
    assert first("aten::add.Tensor", x, b16) == 4 * n
    assert first("aten::add_.Tensor", b16, x) == 2 * n
    assert first("aten::native_layer_norm", x, [48], None, None, 1e-5) == 4 * n


def test_tune_without_template_says_so():
    x = torch.randn(8, 8, dtype=torch.float64)  # no host template for float64
    res = kf.tune("aten::_softmax", (x, -1, False), iterations=3, insert=False)
    assert res["status"] == "no_template" and res["cache_key"] is None


def test_warmup_tunes_a_script_and_a_fresh_process_serves_it(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(320, 1280)\n"
        "for _ in range(30):\n"
        "    y = torch.softmax(x, -1)\n")
    cache = tmp_path / "cache"
    env = {"KFORGE_CACHE_DIR": str(cache)}
    p = run_python(["-m", "kernel_forge.cli", "warmup", "--iterations", "8", "--no-check", "--ops",
                    "aten::_softmax", "--json", str(tmp_path / "w.json"), str(script)], env,
                   timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kforge warmup: results" in p.stdout and "_softmax" in p.stdout
    with open(tmp_path / "w.json") as f:
        res = json.load(f)
    (row,) = res["rows"]
    assert row["status"] in ("inserted", "no_faster_kernel"), row
    # all 8 iterations, unless the worker stopped earlier and says why (a candidate within 10% of
    # the roofline this machine measured, the search space exhausted)
    assert row["eager_us"] > 0 and (row["iterations"] == 8 or (
        0 < row["iterations"] < 8 and row["stop_reason"] not in ("", "iteration budget (8)"))), row
    tree = tree_of(row["job_dir"])
    assert tree["nodes"] and tree["op"] == "aten::_softmax"
    # the job holds real calls captured from the script, plus random inputs
    with open(os.path.join(row["job_dir"], "job.json")) as f:
        job = json.load(f)
    kinds = [c["kind"] for c in job["cases"]]
    assert kinds.count("recorded") == 3 and kinds.count("random") == 3
    if row["status"] == "inserted":
        q = run_python(["-c", "import torch, kernel_forge as kf\n"
                        "x = torch.randn(320, 1280)\n"
                        "y = torch.softmax(x, -1)\n"
                        "assert torch.allclose(y, torch.softmax(x.double(), -1).float(), atol=1e-5)\n"
                        "print(sum(r['served'] for r in kf.stats()))\n"], env)
        assert q.returncode == 0, q.stderr
        assert int(q.stdout.split()[-1]) >= 1


def test_warmup_gives_hot_signatures_the_longest_searches():
    from kernel_forge._warmup import MIN_BUDGET_S, MIN_JOB_S, job_time_budget

    assert job_time_budget(100, 0.5, [0.5, 0.3, 0.2]) == 50  # in proportion to the share
    assert job_time_budget(50, 0.3, [0.3, 0.2]) == 30  # what an earlier job left unused
    assert job_time_budget(100, 0.001, [0.5, 0.001]) == MIN_JOB_S  # a floor to do anything
    assert job_time_budget(2, 0.001, [0.5, 0.001]) == 2  # never more than what is left
    assert job_time_budget(60, 0, [0, 0]) == 30  # no shares: an even split
    # a remainder the worker's "--time-budget 0.0" would read as no limit at all
    assert job_time_budget(0.03, 0.5, [0.5]) < MIN_BUDGET_S


def test_capture_stops_writing_jobs_when_its_time_is_spent(tmp_path):
    script = tmp_path / "model.py"
    script.write_text("import torch\ntorch.softmax(torch.randn(8, 8), -1)\n")
    plan = {"captures": 1, "search": {"iterations": 1}, "deadline": 1.0,  # long past
            "jobs": [{"key": "0123456789abcdef", "signature": "s"},
                     {"key": "fedcba9876543210", "signature": "t"}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    p = run_python(["-m", "kernel_forge._warmup", "capture", str(tmp_path / "plan.json"),
                    str(tmp_path / "out.json"), str(script)], {})
    assert p.returncode == 0, p.stderr
    res = json.loads((tmp_path / "out.json").read_text())
    # the hottest job is tried whatever the time (here it fails: its key is made up)
    assert "hotter signatures" not in res["0123456789abcdef"]["error"]
    assert "hotter signatures" in res["fedcba9876543210"]["error"]


def test_the_time_budget_counts_from_the_end_of_the_script(tmp_path):
    """--time-budget is for tuning: the clock starts once the script has run (a model that
    takes long to build does not eat the searches' time); the jobs file says when it ends."""
    script = tmp_path / "model.py"
    script.write_text("import time, torch\ntime.sleep(2)\ntorch.softmax(torch.randn(8, 8), -1)\n")
    plan = {"captures": 1, "search": {"iterations": 1}, "time_budget": 30,
            "jobs": [{"key": "0123456789abcdef", "signature": "s"}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    t0 = time.time()
    p = run_python(["-m", "kernel_forge._warmup", "capture", str(tmp_path / "plan.json"),
                    str(tmp_path / "out.json"), str(script)], {})
    assert p.returncode == 0, p.stderr
    res = json.loads((tmp_path / "out.json").read_text())
    assert t0 + 2 + 30 <= res["deadline"] <= time.time() + 30, (t0, res)


def test_online_tuning_serves_without_restart(tmp_path):
    code = (
        "import time, torch, kernel_forge as kf\n"
        "x = torch.randn(352, 1408)\n"
        "t0 = time.time(); served = 0\n"
        "while time.time() - t0 < 240 and not served:\n"
        "    y = torch.softmax(x, -1)\n"
        "    time.sleep(0.002)\n"
        "    served = sum(r['served'] for r in kf.stats() if r['op'] == 'aten::_softmax')\n"
        "from kernel_forge import _tuner\n"
        "r = _tuner._online.results\n"
        "ok = [x for x in r if x['status'] == 'inserted']\n"  # the ramp pass's or the deep one's
        "print('RESULT', ok[0]['status'] if ok else r[0]['status'] if r else 'none', served)\n")
    # the whole share of the machine (KFORGE_TUNE_DUTY=1): this tests the pipeline, not the duty
    # cycle (test_online_tuning.py); one intra-op thread: eager timed under a shared box's
    # contention can look slow enough to flag every kernel as too fast to trust
    p = run_python(code, {"KFORGE_CACHE_DIR": str(tmp_path / "cache"), "KFORGE_TUNE": "1",
                          "KFORGE_TUNE_ITERATIONS": "6", "KFORGE_TUNE_INTERVAL": "0.5",
                          "KFORGE_RELOAD_MS": "100", "KFORGE_TUNE_MARGIN": "-100",
                          "KFORGE_TUNE_DUTY": "1", "OMP_NUM_THREADS": "1"}, timeout=400)
    assert p.returncode == 0, p.stderr
    status, served = p.stdout.split("RESULT")[-1].split()
    assert status == "inserted" and int(served) > 0, p.stdout + p.stderr
