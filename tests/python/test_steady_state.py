"""Steady-state ranking: `kforge warmup` and the online tuner rank the work a script repeats,
not its one-time setup, and never give a slot to what can never be tuned."""
import json
import pytest

from conftest import run_python
from kernel_forge import _jobs, _tuner, _warmup

# A model built and prepared the way users do it: heavy one-time work outside any forward
# (casting every weight there and back, a large tensor add repeated while "loading"), then
# forwards whose own ops are far cheaper than that setup.
SCRIPT = """
import torch, torch.nn as nn
torch.set_num_threads(1)

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(384)
        self.fc = nn.Linear(384, 384)

    def forward(self, x):
        return torch.softmax(self.fc(self.ln(x)), -1)

model = nn.Sequential(Block(), Block())
model = model.to(torch.float64).to(torch.float32)  # casts: copy_ per parameter
big, other = torch.randn(1536, 1536), torch.randn(1536, 1536)
for _ in range(25):  # one-time work, much more time than the forwards below
    big = torch.add(big, other)
x = torch.randn(48, 384)
with torch.no_grad():
    for _ in range(40):
        y = model(x)
"""


def test_record_ranks_the_forward_not_the_setup(tmp_path):
    (tmp_path / "model.py").write_text(SCRIPT)
    out = tmp_path / "record.json"
    p = run_python(["-m", "kernel_forge._warmup", "record", str(out), str(tmp_path / "model.py")], {})
    assert p.returncode == 0, p.stderr
    rec = json.loads(out.read_text())
    assert rec["forwards"] == 40
    whole = {r["key"]: r for r in rec["rows"] if r["intercepted"]}
    setup_add = [r for r in whole.values() if r["op"] == "aten::add.Tensor" and "1536" in r["signature"]]
    assert len(setup_add) == 1
    # it never ran inside a forward: it is setup, and the forward's ops rank
    rows, setup = _tuner.steady_rows(rec["rows"], rec["window"])
    assert setup_add[0]["key"] in {r["key"] for r in setup}
    cands = _tuner.hot_candidates(rows, 1, 0.01, set())
    ops = {r["op"] for r in cands}
    assert {"aten::native_layer_norm", "aten::_softmax"} <= ops, ops
    assert all(r["calls"] == 80 for r in cands if r["op"] == "aten::_softmax")
    assert abs(sum(r["share"] for r in rows if r["intercepted"] and not r.get("untunable")) - 1) < 1e-6


def test_warmup_with_default_options_tunes_the_forward(tmp_path):
    (tmp_path / "model.py").write_text(SCRIPT)
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache")}
    p = run_python(["-m", "kernel_forge.cli", "warmup", "--iterations", "3", "--no-check", "--json",
                    str(tmp_path / "w.json"), str(tmp_path / "model.py")], env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    # 40 forwards: ranked after the first 5, captured from the next ones in the same run
    assert "ranking what ran inside 5 module forwards" in p.stderr
    assert "captured in the recording run" in p.stderr
    assert "priority is time x headroom to the copy bandwidth of each row's device: cpu " in p.stderr
    res = json.loads((tmp_path / "w.json").read_text())
    tuned = {r["op"] for r in res["rows"]}
    assert {"aten::native_layer_norm", "aten::_softmax"} <= tuned, tuned
    assert not any("1536" in r["signature"] for r in res["rows"])
    assert any("1536" in r["signature"] for r in res["setup"])
    # the rows in the order they were searched, each with the priority that placed it there
    prios = [r["prio"] for r in res["rows"]]
    assert prios == sorted(prios, reverse=True), prios


def test_untunable_rows_take_no_slot_and_do_not_dilute_the_share():
    rows = [
        {"key": "a", "op": "aten::copy_", "signature": "copy_ cpu->cuda", "intercepted": True,
         "servable": True, "has_kernel": False, "calls": 100, "time_ms": 90.0,
         "untunable": "argument 'src' is on cpu, the call on cuda"},
        {"key": "b", "op": "aten::gelu", "signature": "gelu", "intercepted": True,
         "servable": True, "has_kernel": False, "calls": 100, "time_ms": 5.0, "untunable": None},
        {"key": "c", "op": "aten::relu", "signature": "relu", "intercepted": True,
         "servable": True, "has_kernel": False, "calls": 100, "time_ms": 5.0, "untunable": None},
    ]
    steady, setup = _tuner.steady_rows(rows, None)
    assert not setup
    share = {r["key"]: r["share"] for r in steady}
    assert share == {"a": 0.0, "b": 0.5, "c": 0.5}
    assert [r["key"] for r in _tuner.hot_candidates(steady, 1, 0.02, set())] == ["b", "c"]


def test_the_online_window_forgets_setup():
    before = _tuner.snapshot([
        {"key": "setup", "intercepted": True, "calls": 50, "time_ms": 900.0},
        {"key": "fwd", "intercepted": True, "calls": 10, "time_ms": 1.0},
    ])
    now = [
        {"key": "setup", "intercepted": True, "calls": 50, "time_ms": 900.0},
        {"key": "fwd", "intercepted": True, "calls": 30, "time_ms": 3.5},
    ]
    assert _tuner.stats_delta(now, before) == {"fwd": {"calls": 20, "served": 0}}


def test_a_cold_first_call_does_not_make_a_once_per_forward_op_hot():
    # a window's time difference would hold the first call's 7 ms (lazy kernel loading), which
    # entered while it was the only sample; the row's own estimate leaves it out once there are
    # others: 25 calls of 4 us, against 50 calls of 40 us
    rows = [
        {"key": "mask", "op": "aten::ne.Scalar", "signature": "ne", "intercepted": True, "servable": True,
         "has_kernel": False, "calls": 25, "time_ms": 25 * 0.004, "untunable": None},
        {"key": "mul", "op": "aten::mul.Tensor", "signature": "mul", "intercepted": True, "servable": True,
         "has_kernel": False, "calls": 60, "time_ms": 60 * 0.040, "untunable": None},
    ]
    window = {"mask": {"calls": 25}, "mul": {"calls": 50}}  # 10 muls in the setup
    steady, setup = _tuner.steady_rows(rows, window)
    assert not setup
    by = {r["key"]: r for r in steady}
    assert by["mask"]["time_ms"] == pytest.approx(0.1) and by["mul"]["time_ms"] == pytest.approx(2.0)
    assert by["mul"]["calls"] == 50
    assert [r["key"] for r in _tuner.hot_candidates(steady, 1, 0.01, set())] == ["mul", "mask"]


def test_launch_bound_ops_rank_below_ops_with_room_to_gain():
    # a 3.8 us GPU op whose bytes are nothing has little to gain: a kernel still takes a launch
    tiny = {"key": "t", "device": "cuda:0", "time_ms": 10.0, "eager_us": 3.8, "bytes_moved": 32768}
    big = {"key": "b", "device": "cuda:0", "time_ms": 8.0, "eager_us": 30.0, "bytes_moved": 16 << 20}
    bw = 4000.0
    assert _tuner.priority(tiny, bw) < _tuner.priority(big, bw)
    assert _tuner.priority(tiny, bw) == pytest.approx(10.0 * (1 - 2.5 / 3.8))
    # on the host the floor is small: the same row keeps nearly all of its time
    assert _tuner.priority(dict(tiny, device="cpu"), bw) > 9.0


def test_a_gpu_workload_ranks_against_the_gpu_bandwidth_not_the_hosts(monkeypatch):
    # a GPU model's script runs CPU ops too (building it, and some inside its forwards): the
    # recording measures both devices' copy bandwidth, and each row is ranked against its own
    # device's, whichever came first and whichever row is hottest
    def row(key, device, time_ms, eager_us, nbytes):
        return {"key": key, "op": f"aten::{key}", "signature": key, "device": device,
                "intercepted": True, "servable": True, "has_kernel": False, "untunable": None,
                "calls": 10, "time_ms": time_ms, "eager_us": eager_us, "bytes_moved": nbytes}
    rows = [row("normal_", "cpu", 0.5, 100.0, 1_000_000),
            row("index", "cpu", 9.0, 900.0, 1_000_000),  # a CPU op in the forward, hotter
            row("native_layer_norm", "cuda:0", 6.2, 71.8, 38_500_000),
            row("add", "cuda:0", 2.0, 19.2, 19_300_000)]
    for order in (("cpu", "cuda:0"), ("cuda:0", "cpu")):
        bws = {"cpu": 450.0, "cuda:0": 4000.0}
        rec = {"rows": [dict(r) for r in rows], "bandwidth_gbs": {d: bws[d] for d in order},
               "window": None, "chains": []}
        opts = {"iterations": 5, "seed": 1, "margin": 0.03, "proposer": "builtin",
                "cache_dir": "/nonexistent", "ops": [], "min_share": 0.01, "min_calls": 1,
                "max_jobs": 0, "chains": True, "max_chains": 0, "captures": 1}
        p = _warmup.make_plan(rec, opts)
        assert p["bw"] == bws
        prio = {r["key"]: p["prio"][id(r)] for r in p["cands"]}
        # against 4000 GB/s the norm's 38.5 MB take 9.6 us of its 71.8: most of its time to gain
        assert prio["native_layer_norm"] == pytest.approx(6.2 * (1 - 9.625 / 71.8)), order
        assert prio["add"] == pytest.approx(2.0 * (1 - 4.825 / 19.2)), order
        assert prio["index"] == pytest.approx(9.0 * (1 - 1_000_000 / 450e3 / 900.0)), order
    assert _tuner.workload_devices(rows) == ["cpu", "cuda:0"]
    # and each device's bandwidth is measured on that device: "cuda:0" is the GPU (the warm-up
    # once read every name but "cuda" as the host, and ranked GPU rows against a host copy)
    probed = []
    monkeypatch.setattr(_jobs, "copy_bandwidth_gbs",
                        lambda device, nbytes: probed.append(device) or bws[str(device)])
    assert _tuner.device_bandwidths(rows) == bws
    assert [(d.type, d.index) for d in probed] == [("cpu", None), ("cuda", 0)]


def test_a_chain_ranks_by_the_headroom_of_its_fused_bytes():
    # ConvNeXt's layer scale then residual add, each at copy speed: one kernel saves one read of
    # the five (the scaled tensor); an RMSNorm's eight members at 5% of copy speed save most
    mb = 64 << 20
    rows = {"mul": {"device": "cuda:0", "bytes_moved": 2 * mb + 1024, "out0_bytes": mb},
            "add": {"device": "cuda:0", "bytes_moved": 3 * mb, "out0_bytes": mb}}
    spec = {"members": [{"op": "aten::mul.Tensor", "inputs": [["head", 0], ["head", 1]]},
                        {"op": "aten::add.Tensor", "inputs": [["member", 0, 0], ["ext", 0]]}]}
    bw = 4000.0
    copy_us = mb / (bw * 1e3)
    scale = {"keys": ["mul", "add"], "spec": spec, "time_ms": 10.0, "eager_us": 5.1 * copy_us}
    fused_us = (4 * mb + 1024) / (bw * 1e3)
    assert _tuner.chain_priority(scale, rows, bw) == pytest.approx(10.0 * (1 - fused_us / (5.1 * copy_us)))
    assert _tuner.chain_priority(scale, rows, bw) < 2.5
    slow = dict(scale, eager_us=100 * copy_us)
    assert _tuner.chain_priority(slow, rows, bw) > 9.0
    # a member's bytes unknown: its time, as before
    assert _tuner.chain_priority(scale, {"mul": rows["mul"]}, bw) == 10.0
    assert _tuner.chain_priority(scale, rows, None) == 10.0


def test_calls_a_chain_kernel_served_are_not_ranked_again():
    # the members of a landed chain: their calls are handed out by the chain kernel (counted as
    # served, no kernel of their own); only what still ran eager is ranked
    rows = [{"key": "pow", "intercepted": True, "calls": 200, "time_ms": 20.0, "servable": True,
             "has_kernel": False, "served": 180, "signature": "pow"},
            {"key": "mm", "intercepted": True, "calls": 200, "time_ms": 10.0, "servable": True,
             "has_kernel": False, "served": 0, "signature": "mm"},
            {"key": "relu", "intercepted": True, "calls": 200, "time_ms": 10.0, "servable": True,
             "has_kernel": True, "served": 100, "signature": "relu"}]
    before = _tuner.snapshot([dict(r, calls=100, served=90 if r["key"] == "pow" else 0)
                              for r in rows])
    window = _tuner.stats_delta(rows, before)
    assert window["pow"] == {"calls": 100, "served": 90}
    steady, _ = _tuner.steady_rows(rows, window)
    by = {r["key"]: r for r in steady}
    assert by["pow"]["calls"] == 10 and by["pow"]["time_ms"] == pytest.approx(1.0)
    assert by["relu"]["calls"] == 100  # its own kernel: every call counts
    assert [r["key"] for r in _tuner.hot_candidates(steady, 1, 0.2, set())] == ["mm"]


def test_chains_with_one_fusable_spec_are_one_candidate():
    # add -> LN recorded alone and as the start of add -> LN -> add -> LN (whose prefix ends at
    # the norm's three outputs): one job, with the calls of both
    from kernel_forge import _warmup

    spec = {"sig_hex": "ab12", "members": [{"op": "aten::add.Tensor"}, {"op": "aten::native_layer_norm"}]}
    rows = [{"key": k, "intercepted": True, "time_ms": 1.0, "eager_us": us}
            for k, us in (("add", 10.0), ("ln", 20.0))]
    chains = [{"id": "1", "calls": 24, "spec": spec, "keys": ["add", "ln"], "writes": [False, False]},
              {"id": "2", "calls": 12, "spec": spec, "keys": ["add", "ln", "add", "ln"],
               "writes": [False] * 4}]
    cands = _warmup.chain_candidates(chains, rows, 0.01, 4)
    assert len(cands) == 1 and cands[0]["calls"] == 36 and cands[0]["keys"] == ["add", "ln"]
    assert cands[0]["time_ms"] == pytest.approx(36 * 30 / 1000)


def test_a_chain_holding_a_spec_further_in_adds_its_calls():
    # the RMSNorm of blocks 2.. is recorded after the residual add, in a chain whose own spec the
    # cast ends before the norm; the spec's kernel serves it there too
    from kernel_forge import _warmup

    spec = {"sig_hex": "cd34", "members": [{"op": "aten::pow.Tensor_Scalar"}, {"op": "aten::mean.dim"}]}
    rows = [{"key": k, "intercepted": True, "time_ms": 1.0, "eager_us": 10.0} for k in ("pow", "mean")]
    chains = [{"id": "1", "calls": 19, "spec": spec, "spec_first": 1, "keys": ["cast", "pow", "mean"],
               "writes": [True, False, False]},
              {"id": "2", "calls": 40, "spec": None, "keys": ["add", "cast", "pow", "mean"],
               "writes": [False, True, False, False]},
              {"id": "3", "calls": 7, "spec": None, "keys": ["pow", "add"], "writes": [False, False]}]
    (c,) = _warmup.chain_candidates(chains, rows, 0.01, 4)
    assert c["calls"] == 59 and c["keys"] == ["pow", "mean"]


def test_chain_candidates_are_bounded_by_share_not_count_by_default():
    # a model's norms of several widths and its rotary chain are more than four hot chains
    from kernel_forge import _warmup

    rows = [{"key": f"k{i}", "intercepted": True, "time_ms": 1.0, "eager_us": 10.0 * (i + 1)}
            for i in range(12)]
    chains = [{"id": str(i), "calls": 10, "writes": [False, False], "keys": [f"k{2 * i}", f"k{2 * i + 1}"],
               "spec": {"sig_hex": f"s{i}", "members": [{"op": "aten::mul.Tensor"}] * 2}}
              for i in range(6)]
    everything = _warmup.chain_candidates(chains, rows, 0.01, 0)
    assert [c["id"] for c in everything] == ["5", "4", "3", "2", "1", "0"]  # hottest first
    assert [c["id"] for c in _warmup.chain_candidates(chains, rows, 0.01, 2)] == ["5", "4"]
    # the share still bounds them: chain 0 holds 10 x 30 us of the rows' 12 ms
    assert [c["id"] for c in _warmup.chain_candidates(chains, rows, 0.03, 0)] == ["5", "4", "3", "2", "1"]
    import inspect
    assert inspect.signature(_warmup.warmup).parameters["max_chains"].default == 0


def test_a_longer_spec_holding_a_chain_keeps_its_calls():
    # a norm recorded alone in the first forward (its weight new then) and joined by its weight's
    # cast in every later one: the longer spec's kernel serves those calls, so the shorter one
    # counts only its own runs
    from kernel_forge import _warmup

    short = {"sig_hex": "s", "members": [{"op": "aten::pow.Tensor_Scalar"}, {"op": "aten::mean.dim"}]}
    long_ = {"sig_hex": "l", "members": [{"op": "aten::pow.Tensor_Scalar"}, {"op": "aten::mean.dim"},
                                         {"op": "aten::_to_copy"}, {"op": "aten::mul.Tensor"}]}
    rows = [{"key": k, "intercepted": True, "time_ms": 1.0, "eager_us": 10.0}
            for k in ("pow", "mean", "cast", "mul")]
    chains = [{"id": "1", "calls": 3, "spec": short, "keys": ["pow", "mean"], "writes": [False] * 2},
              {"id": "2", "calls": 57, "spec": long_, "keys": ["pow", "mean", "cast", "mul"],
               "writes": [False] * 4}]
    by = {c["id"]: c for c in _warmup.chain_candidates(chains, rows, 0.0, 0)}
    assert by["1"]["calls"] == 3 and by["2"]["calls"] == 57
    assert [c["id"] for c in _warmup.chain_candidates(chains, rows, 0.0, 0)] == ["2", "1"]


def test_a_chain_job_is_weighed_against_its_members_own_kernels(tmp_path):
    # add -> group_norm, eager 30 us: the norm (18 of the 30 us recorded) has a kernel inserted
    # earlier in the warm-up at a third of its time, so the chain has 12 + 6 = 18 us to beat;
    # the add's kernel lost (not inserted: nothing saved)
    rec = {"a": 12.0, "n": 18.0}
    (tmp_path / "job.json").write_text(json.dumps({"eager_us": 30.0, "call_floor_us": 2.0}))
    rows = {"n": {"status": "inserted", "eager_us": 18.0, "best_us": 6.0},
            "a": {"status": "no_faster_kernel", "eager_us": 12.0, "best_us": 13.0}}
    assert _warmup.weigh_chain_job(["a", "n"], rows, str(tmp_path), rec) == pytest.approx(18.0)
    job = json.loads((tmp_path / "job.json").read_text())
    assert job["eager_us"] == pytest.approx(18.0) and job["members_eager_us"] == 30.0
    # the chain's job timed its members faster than their own jobs did (the norm reading the
    # add's output from the L2): the norm's kernel saves the same part of it, not the op job's
    # microseconds (15 - 12 would leave a 3 us target no kernel meets)
    (tmp_path / "job.json").write_text(json.dumps({"eager_us": 15.0}))
    assert _warmup.weigh_chain_job(["a", "n"], rows, str(tmp_path), rec) == pytest.approx(9.0)
    # no member with a kernel of its own: the job as it was
    (tmp_path / "job.json").write_text(json.dumps({"eager_us": 30.0}))
    assert _warmup.weigh_chain_job(["a", "x"], rows, str(tmp_path), rec) is None
    assert json.loads((tmp_path / "job.json").read_text()) == {"eager_us": 30.0}


def test_a_chain_is_weighed_again_against_member_kernels_inserted_after_it(tmp_path):
    # the chain's job was written against its members run eager (30 us) and its kernel took
    # 20 us; a kernel for member n (18 of the 30 us recorded) inserted later takes a third of
    # its time: the members take 18 us, the chain is not 3% faster than that
    rec = {"a": 12.0, "n": 18.0}
    (tmp_path / "job.json").write_text(json.dumps({"eager_us": 30.0}))
    row = {"job_dir": str(tmp_path), "best_us": 20.0}
    rows = {"n": {"status": "inserted", "eager_us": 18.0, "best_us": 6.0}}
    assert _warmup.members_beat_chain(row, ["a", "n"], rows, rec) == pytest.approx(18.0)
    # a faster chain stays; so does one whose members have no kernels; a weighed job counts
    # from its members' eager time; an untimed recorded row (-1) weighs by its op job's time
    assert _warmup.members_beat_chain(dict(row, best_us=12.0), ["a", "n"], rows, rec) is None
    assert _warmup.members_beat_chain(row, ["a"], rows, rec) is None
    (tmp_path / "job.json").write_text(json.dumps({"eager_us": 18.0, "members_eager_us": 30.0}))
    assert _warmup.members_beat_chain(row, ["a", "n"], rows, rec) == pytest.approx(18.0)
    assert _warmup.members_beat_chain(row, ["a", "n"], rows, dict(rec, n=-1.0)) == pytest.approx(18.0)


def test_a_chain_is_timed_as_its_members_rows_count_their_calls():
    # a preempted sample raises a member's mean eager sample, not its clipped time_ms: the
    # chain's time is its members' time per call as their rows count it, its share at most theirs
    from kernel_forge import _warmup

    spec = {"sig_hex": "ab", "members": [{"op": "aten::add.Tensor"}, {"op": "aten::native_layer_norm"}]}
    rows = [{"key": "add", "intercepted": True, "calls": 100, "time_ms": 2.0, "eager_us": 65.0},
            {"key": "ln", "intercepted": True, "calls": 100, "time_ms": 3.0, "eager_us": 30.0}]
    (c,) = _warmup.chain_candidates([{"id": "1", "calls": 100, "spec": spec, "keys": ["add", "ln"],
                                      "writes": [False, False]}], rows, 0.0, 0)
    assert c["eager_us"] == pytest.approx(50.0) and c["share"] == pytest.approx(1.0)
