"""The online tuner's wait for a hot signature's next calls (issue 21): a script's one-time setup
(weights filled while the model is built, ranked because it spanned two looks) stops being
called, so the wait ends after a few of its call gaps instead of a minute, the signature is
looked at again later instead of never, and no copies are left armed."""

import pytest

from kernel_forge import _tuner

from test_online_ramp import _tuner_with


@pytest.fixture
def tuner(monkeypatch):
    t, clock = _tuner_with(monkeypatch, interval_s=2.0, captures=3)
    monkeypatch.setattr(_tuner.time, "sleep", lambda s: setattr(clock, "t", clock.t + s))
    monkeypatch.setattr(_tuner, "n_tensor_args", lambda key: 1)
    asked, arrivals = [], {}
    monkeypatch.setattr(_tuner, "request_captures", lambda key, n: asked.append((key, n)))

    def take(key, n):  # the calls due by now (arrivals: key -> [times])
        due = [a for a in arrivals.get(key, []) if a <= clock.t]
        arrivals[key] = [a for a in arrivals.get(key, []) if a > clock.t]
        return [["x"] for _ in due]

    monkeypatch.setattr(_tuner, "take_captures", take)
    return t, clock, asked, arrivals


def test_setup_work_that_stopped_is_given_up_after_three_looks(tuner):
    t, clock, asked, _ = tuner
    t.seen["fill"] = (clock.t - 2.0, 40)  # 5 calls in the last 2 s while the model was built
    t.calls["fill"] = 45
    t0 = clock.t
    with pytest.raises(_tuner.NotCalled, match="not called for 6 s"):
        t._capture(["fill"])
    assert 6.0 <= clock.t - t0 < 6.5, clock.t - t0
    assert asked == [("fill", 3), ("fill", 0)]  # the request is taken back


def test_a_slow_model_is_waited_for_by_its_own_call_gap(tuner):
    t, clock, asked, arrivals = tuner
    t.seen["mm"] = (clock.t - 80.0, 1)  # one call per 8 s forward
    t.calls["mm"] = 11
    assert t._idle_limit(["mm"]) == 24.0
    arrivals["mm"] = [clock.t + 20, clock.t + 28, clock.t + 36]
    caps = t._capture(["mm"])
    assert len(caps["mm"]) == 3 and asked == [("mm", 3)]


def test_what_came_before_the_calls_stopped_is_used(tuner):
    t, clock, asked, arrivals = tuner
    t.seen["add"] = (clock.t - 2.0, 0)
    t.calls["add"] = 100
    arrivals["add"] = [clock.t + 0.1]
    caps = t._capture(["add"])
    assert len(caps["add"]) == 1 and asked == [("add", 3), ("add", 0)]


def test_never_waits_more_than_a_minute(tuner):
    t, clock, _, _ = tuner
    t.seen["rare"] = (clock.t - 3600.0, 0)
    t.calls["rare"] = 2
    assert t._idle_limit(["rare"]) == 60.0


def test_a_signature_not_called_is_looked_at_again_later(tuner, monkeypatch):
    t, _, _, _ = tuner

    def prepare(row, search):
        raise _tuner.NotCalled("not called for 6 s")

    monkeypatch.setattr(t, "_prepare", prepare)
    monkeypatch.setattr(t, "_prepare_chain", prepare)
    row = {"signature": "fill_.Scalar(f32[2048], value=1.0)", "key": "fill", "device": "cpu"}
    assert t.tune_one(row, {}) == "later"
    assert t.tune_chain(dict(row, spec={}), {}) == "later"


def test_a_chain_waits_for_its_slowest_member(tuner):
    """A chain's capture waits by its slowest member's own call gap (calls another chain's
    kernel serves are copied too), not a flat minute."""
    t, clock, _, arrivals = tuner
    t.seen["head"] = (clock.t - 2.0, 0)
    t.calls["head"] = 100
    t.seen["member"] = (clock.t - 40.0, 0)  # one call per 10 s
    t.calls["member"] = 4
    assert t._idle_limit(["head", "member"]) == 30.0
    arrivals["head"] = [clock.t + 0.1, clock.t + 0.2, clock.t + 0.3]
    arrivals["member"] = [clock.t + 8, clock.t + 18, clock.t + 28]
    t0 = clock.t
    caps = t._capture(["head", "member"])
    assert len(caps["head"]) == 3 and len(caps["member"]) == 3
    assert clock.t - t0 < 29.0
