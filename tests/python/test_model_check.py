"""The warm-up's model check (kernel_forge/_modelcheck.py, README "The model check"): the script
once more with its forwards timed with every kernel, with chain kernels off and with nothing
served in turn; what makes the forwards slower as a whole is disabled in the cache. The verdict
is tested on given timings (a CPU test cannot make a kernel lose in a model on demand); the
runs, the switches and the disabling on real ones."""

import json

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _modelcheck as mc
from kernel_forge import _warmup

from conftest import run_python
from test_chain_serving import attach, entry, keys_of, rms, warm
from test_online_tuning import online_env
from test_warmup_one_run import SCRIPT  # gelu(x * 1.5) for argv[1] forwards

ARMS = ["all", "ops", "none"]


def rows_of(ms: dict, rounds: int, jitter=(1.0, 1.02, 0.99, 1.01)):
    """Timed forwards [round, arm, ms]: each arm's ms, a little noise that every arm shares."""
    return [[r, a, ms[a] * jitter[r % len(jitter)]] for r in range(1, rounds + 1) for a in ms]


def test_chains_off_faster_keeps_the_op_kernels():
    v = mc.verdict(rows_of({"all": 1.20, "ops": 1.08, "none": 1.10}, 8), ARMS)
    assert v["keep"] == "ops" and v["rounds"] == 8, v
    # nothing served beats everything served too, but not chains off: the op kernels stay
    assert [(c["faster"], c["than"], c["decided"]) for c in v["compared"]] == [
        ("ops", "all", True), ("none", "all", True), ("none", "ops", False)], v


def test_nothing_served_must_win_by_more():
    v = mc.verdict(rows_of({"all": 1.00, "ops": 1.00, "none": 0.96}, 8), ARMS)
    assert v["keep"] == "all", v  # 4% is not the 5% that takes every kernel away
    v = mc.verdict(rows_of({"all": 1.00, "ops": 1.00, "none": 0.90}, 8), ARMS)
    assert v["keep"] == "none", v


def test_a_faster_median_alone_is_not_enough():
    """Chains off much faster in half the rounds, a little slower in the others: the median
    ratio is over the margin, the signed-rank test does not say faster."""
    rows = []
    for r in range(1, 11):
        rows += [[r, "all", 1.3 if r % 2 else 0.98], [r, "ops", 1.0], [r, "none", 1.1]]
    v = mc.verdict(rows, ARMS)
    assert v["keep"] == "all" and v["compared"][0]["ratio"] > 1.1 and v["compared"][0]["p"] > 0.05, v


def test_a_small_gap_every_round_shows_is_enough():
    """Chains off 1.5% faster: not the 3% margin, but in every one of 16 rounds (p < 0.001, the
    UNet's chains on an H100); in 8 rounds the test cannot say so yet, nor with rounds split."""
    ms = {"all": 1.015, "ops": 1.0, "none": 1.03}
    v = mc.verdict(rows_of(ms, 16), ARMS)
    assert v["keep"] == "ops" and v["compared"][0]["p"] < 0.002, v
    assert mc.verdict(rows_of(ms, 8), ARMS)["keep"] == "all"
    rows = []
    for r in range(1, 17):
        rows += [[r, "all", 1.025 if r % 3 else 0.99], [r, "ops", 1.0], [r, "none", 1.05]]
    v = mc.verdict(rows, ARMS)
    assert v["keep"] == "all" and v["compared"][0]["p"] > 0.002, v


def test_signed_rank_p():
    assert mc.signed_rank_p([]) == 1.0
    assert mc.signed_rank_p([0.1] * 8) < 0.01 < 0.99 < mc.signed_rank_p([-0.1] * 8)
    assert abs(mc.signed_rank_p([0.1, -0.1] * 5) - 0.5) < 0.1


def test_too_few_rounds_are_not_judged():
    v = mc.verdict(rows_of({"all": 2.0, "none": 1.0}, mc.MIN_ROUNDS - 1), ["all", "none"])
    assert v["keep"] == "all" and "not judged" in v["why"], v
    # a round that misses an arm (the script ended in it) is not a round
    rows = rows_of({"all": 2.0, "none": 1.0}, mc.MIN_ROUNDS) + [[99, "all", 2.0]]
    assert mc.verdict(rows, ["all", "none"])["rounds"] == mc.MIN_ROUNDS


def test_merge_puts_later_runs_after_earlier_rounds():
    a = {"arms": ARMS, "rows": rows_of({"all": 1, "ops": 1, "none": 1}, 3), "cuda": False,
         "served": {"ops": [{"key": "k1", "served": 5}], "chains": []}}
    b = {"arms": ["all", "none"], "rows": rows_of({"all": 1, "none": 1}, 3), "cuda": False,
         "served": {"ops": [{"key": "k1", "served": 2}, {"key": "k2", "served": 1}], "chains": []}}
    m = mc.merge(mc.merge(None, a), b)
    assert m["runs"] == 2 and m["arms"] == ["all", "none"]
    assert sorted({r for r, _, _ in m["rows"]}) == [1, 2, 3, 5, 6, 7]
    assert {e["key"]: e["served"] for e in m["served"]["ops"]} == {"k1": 7, "k2": 1}
    assert mc.complete_rounds(m["rows"], m["arms"]) == 6


def test_more_runs_only_while_something_could_be_disabled():
    res = {"arms": ARMS, "runs": 1, "rows": rows_of({"all": 1.0, "ops": 1.01, "none": 1.2}, mc.MIN_ROUNDS)}
    assert not mc.wants_more(res, 1.0)  # every kernel served is already the fastest
    res["rows"] = rows_of({"all": 1.0, "ops": 0.99, "none": 1.2}, mc.MIN_ROUNDS)
    assert mc.wants_more(res, 1.0) and not mc.wants_more(res, mc.MORE_S)
    res["runs"] = mc.MAX_RUNS
    assert not mc.wants_more(res, 1.0)
    res.update(runs=1, rows=rows_of({"all": 1.0, "ops": 1.0, "none": 1.0}, mc.MAX_ROUNDS))
    assert not mc.wants_more(res, 1.0)


def test_apply_disables_what_the_verdict_names():
    res = {"arms": ARMS, "rows": rows_of({"all": 1.2, "ops": 1.0, "none": 1.1}, 8),
           "served": {"ops": [{"key": "op1", "served": 9}], "chains": [{"key": "ch1", "served": 9}]}}
    gone = []
    v = mc.apply(res, "/cache", lambda d, k, why: gone.append((d, k, why)) or "")
    assert v["keep"] == "ops" and [k for _, k, _ in gone] == ["ch1"], v
    assert "1.206 ms with every kernel, 1.005 ms with chain kernels off, 1.106 ms with nothing " \
        "served" in gone[0][2], gone
    res["rows"] = rows_of({"all": 1.2, "ops": 1.2, "none": 1.0}, 8)
    gone.clear()
    v = mc.apply(res, "/cache", lambda d, k, why: gone.append(k) or ("locked" if k == "op1" else ""))
    assert v["keep"] == "none" and gone == ["ch1", "op1"], v
    assert [e["key"] for e in v["disabled"]] == ["ch1"] and v["errors"][0]["error"] == "locked"


def test_a_chain_entry_whose_heads_only_observed_counts_as_served(monkeypatch):
    """Chain kernels off measured every attached entry whose head came: one that never completes
    is observed at each head (a cost), so it is disabled with the others."""
    entries = [{"cache_key": "c1", "ops": "a -> b", "heads": 3, "observed": 0},
               {"cache_key": "c2", "ops": "c -> d", "heads": 0, "observed": 5},
               {"cache_key": "c3", "ops": "e -> f", "heads": 0, "observed": 0}]
    monkeypatch.setattr(kf, "chain_entries", lambda: entries)
    monkeypatch.setattr(kf, "stats", lambda: [])
    monkeypatch.setattr(kf, "cache_entries", lambda: [])
    assert [c["key"] for c in mc.served_now()["chains"]] == ["c1", "c2"]


def test_disable_chains_runs_the_members_and_keeps_the_op_kernels():
    spec, x, w = attach(53, 64)  # a shape of its own: entries live as long as the process
    warm(spec, x, w)
    heads = entry(spec)["heads"]
    kf.disable_chains()
    try:
        assert not kf.chains_enabled() and kf.enabled()
        for _ in range(3):
            y = rms(x, w)
        assert entry(spec)["heads"] == heads  # no head started
        kf.disable()
        try:
            assert torch.equal(y, rms(x, w))  # the members ran as eager runs them
        finally:
            kf.enable()
    finally:
        kf.enable_chains()
    rms(x, w)
    assert entry(spec)["heads"] == heads + 1 and kf.chains_enabled()
    assert keys_of(spec)


class Tiny(torch.nn.Module):
    seen: list = []  # per forward: (enabled, chains enabled) while it runs

    def forward(self, x):
        self.seen.append((kf.enabled(), kf.chains_enabled()))
        return torch.nn.functional.gelu(x * 1.5)


def run_arms(dev: str):
    """ForwardArms in this process: the switches per forward, its stop, the timing it uses."""
    stops = []
    fa = mc.ForwardArms(["all", "ops", "none"], lambda: stops.append(fa.n))
    m, x = Tiny().to(dev), torch.randn(64, 256, device=dev)
    m.register_parameter("p", torch.nn.Parameter(torch.zeros(1, device=dev)))  # says the device
    m.seen = []
    fa.install()
    try:
        for _ in range(3 * (mc.SKIP_ROUNDS + mc.MAX_ROUNDS) + 5):
            m(x)
    finally:
        fa.remove()
    rows = fa.finish()
    assert kf.enabled() and kf.chains_enabled()  # everything served again
    return fa, stops, rows, m.seen


@pytest.mark.parametrize("dev", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_forward_arms_switch_per_forward_and_stop_once_judged(dev):
    if dev == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    fa, stops, rows, seen = run_arms(dev)
    assert fa.cuda == (dev == "cuda")
    n = 3 * (mc.SKIP_ROUNDS + mc.MAX_ROUNDS)
    assert stops == [n]  # judged after the last timed round, once
    assert len(rows) == 3 * mc.MAX_ROUNDS and all(ms > 0 for _, _, ms in rows)
    # round 0 (untimed) all, ops, none; round 1 reversed; round 2 as round 0
    assert [a for _, a, _ in rows[:6]] == ["none", "ops", "all", "all", "ops", "none"]
    want = {"all": (True, True), "ops": (True, False), "none": (False, False)}
    assert seen[:n] == [want[fa.arm_of(i)[1]] for i in range(n)]
    assert set(seen[n:]) == {(True, True)}  # after the stop: untouched


def test_after_its_untimed_round_the_check_hooks_only_the_outermost_modules():
    # global module hooks put every module call on torch's slow path (1.3 ms of host time a
    # forward on PVT-v2-B0 on the CPU): the timed rounds run with hooks on the root alone
    from torch.nn.modules import module as nm

    fa = mc.ForwardArms(["all", "ops", "none"], lambda: None)
    inner = Tiny()
    root, other, x = torch.nn.Sequential(torch.nn.Identity(), inner), Tiny(), torch.randn(4, 8)
    before = (len(nm._global_forward_pre_hooks), len(nm._global_forward_hooks))
    fa.install()
    try:
        for i in range(3 * mc.SKIP_ROUNDS):
            assert len(nm._global_forward_pre_hooks) == before[0] + 1, i
            root(x)
        assert (len(nm._global_forward_pre_hooks), len(nm._global_forward_hooks)) == before
        assert len(root._forward_pre_hooks) == 1 and not inner._forward_pre_hooks
        for _ in range(4):
            root(x)
        other(x)  # an outermost forward of a module not seen in the first round: not seen
        assert fa.n == 3 * mc.SKIP_ROUNDS + 4 and len(fa.samples) == fa.n
        assert all(s[3] is not None for s in fa.samples)  # each one ended
    finally:
        fa.remove()
    assert not root._forward_pre_hooks and not root._forward_hooks
    assert (len(nm._global_forward_pre_hooks), len(nm._global_forward_hooks)) == before
    fa.finish()
    assert kf.enabled() and kf.chains_enabled()


def test_forwards_overlapping_on_threads_are_not_judged():
    import threading

    go = threading.Barrier(2)
    fa = mc.ForwardArms(["all", "none"], lambda: None)

    class Both(torch.nn.Module):
        def forward(self, x):
            go.wait(timeout=30)  # both threads inside a forward at once
            return x + 1

    m = Both()
    fa.install()
    try:
        ts = [threading.Thread(target=lambda: [m(torch.ones(2)) for _ in range(8)]) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        fa.remove()
    assert fa.overlap and fa.finish() == [] and kf.enabled() and kf.chains_enabled()
    v = mc.apply({"arms": ["all", "none"], "rows": [], "overlap": True,
                  "served": {"ops": [{"key": "k", "served": 1}], "chains": []}}, "/c",
                 lambda *a: "")
    assert v["keep"] == "all" and "several threads" in v["why"] and not v["disabled"], v


def warmup(tmp_path, forwards, *opts):
    (tmp_path / "model.py").write_text(SCRIPT)
    env = {"KFORGE_CACHE_DIR": str(tmp_path / "cache")}
    p = run_python(["-m", "kernel_forge.cli", "warmup", "--iterations", "3", "--margin", "-100",
                    *opts, "--json", str(tmp_path / "w.json"), str(tmp_path / "model.py"),
                    str(forwards)], env, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open(tmp_path / "w.json") as f:
        return p, json.load(f)


def test_the_warmup_checks_the_model_and_stops_the_script_once_judged(tmp_path):
    p, res = warmup(tmp_path, 200)
    out = p.stdout + p.stderr
    assert any(r["status"] in ("inserted", "disabled") for r in res["rows"]), res["rows"]
    v = res["check"]
    assert v["rounds"] == mc.MAX_ROUNDS and set(v["ms"]) >= {"all", "none"}, v
    assert "(check)" in out and "kforge warmup: model check, 16 rounds of forwards in 1 run" in out
    assert out.count("forwards done") == 1  # the recording run's; the check run was stopped
    disabled = {e["key"] for e in v["disabled"]}
    for r in res["rows"]:  # the table says what the check disabled, and why
        assert (r["status"] == "disabled") == (r.get("entry_key") in disabled) or \
            "members with their own kernels" in r.get("detail", ""), r
    if v["keep"] == "all":
        assert "model check: every kernel kept" in out


def test_a_short_script_runs_again_for_more_rounds_and_no_check_skips_it(tmp_path):
    p, res = warmup(tmp_path, 12)
    v = res["check"]
    runs = p.stderr.count("(check)")
    assert runs >= 2 and f"in {runs} runs" in p.stderr, p.stderr[-3000:]
    assert v["rounds"] >= mc.MIN_ROUNDS, v
    (tmp_path / "again").mkdir()
    p, res = warmup(tmp_path / "again", 12, "--no-check")
    assert res["check"] is None and "(check)" not in p.stderr


def test_a_warm_cache_that_serves_the_script_is_checked_too(tmp_path):
    """A second warm-up finds its signatures served by the first one's entries (nothing or
    little left to insert): the model is checked all the same."""
    warmup(tmp_path, 40, "--no-check")
    p, res = warmup(tmp_path, 40)
    assert res["check"] is not None and res["check"]["rounds"] >= mc.MIN_ROUNDS, p.stderr[-3000:]
    assert "kforge warmup: model check," in p.stderr


def test_check_model_on_a_failing_script_judges_nothing(tmp_path):
    (tmp_path / "bad.py").write_text("raise SystemExit(3)\n")
    said = []
    v = _warmup.check_model([str(tmp_path / "bad.py")], str(tmp_path), said.append)
    assert v["keep"] == "all" and v["disabled"] == [] and v["rounds"] == 0, v
    assert sum("(check)" in m for m in said) == 1, said  # no second run of a script that times none
    assert any("not judged" in m for m in said), said


ONLINE = r'''
import json, time
import torch, torch.nn.functional as F
import kernel_forge as kf
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w, self.b = torch.nn.Parameter(torch.randn(512)), torch.nn.Parameter(torch.randn(512))
    def forward(self, y):
        for _ in range(3):
            y = torch.softmax(F.layer_norm(y, (512,), self.w, self.b), -1)
        return y
m, x = M(), torch.randn(128, 512)
end = time.time() + 150
with torch.no_grad():
    while time.time() < end and not kf.tuner_status()["checks"]:
        m(x)
        time.sleep(0.001)
print("RESULT " + json.dumps({"status": kf.tuner_status(), "enabled": kf.enabled(),
                              "chains": kf.chains_enabled()}))
'''


def test_online_tuning_checks_the_model_once_kernels_land(tmp_path):
    p = run_python(ONLINE, online_env(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.split("RESULT ")[-1])
    st = res["status"]
    assert st["landed"] and st["settings"]["check"], st
    (c,) = st["checks"]
    assert c["rounds"] == mc.MAX_ROUNDS and set(c["ms"]) >= {"all", "none"}, c
    # what serves from now on in this process is the arm the check kept
    assert res["enabled"] == (c["keep"] != "none"), res
    assert res["chains"] == (c["keep"] != "ops"), res  # (nothing served: chains switch no more)
    assert "online tuning: model check, 16 rounds" in p.stderr, p.stderr[-3000:]
    # kforge ui's tuner line reads the status file the tuner wrote
    from kernel_forge.ui.server import App

    t = App(str(tmp_path / "cache"), str(tmp_path / "cache" / "jobs")).tuner()
    assert t["checks"] == 1 and t["last_check"] == c["keep"], t
