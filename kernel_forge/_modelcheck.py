"""The warm-up's model check (README, "The model check"): the script runs once more with the new
cache, its outermost module forwards timed in turn with every kernel served, with chain kernels
off, and with nothing served. A job times one kernel against eager with its data hot; in a model,
a served path that is fast alone can still cost the model more than it saves (its code and data
cold once a forward, evicting what the interpreter and torch use next: the tiny Llama on the
CPU, benchmarks/results/tiny-llama-cpu-host-2026-12-06/). Only the model's own time can say so.
What the check finds slower as a whole is disabled in the cache, with the numbers as the reason.
"""

import json
import math
import os
import statistics
import sys
import time

from ._forwards import OutermostForwards

ARMS = ("all", "ops", "none")  # everything served; chain kernels off; nothing served
LABELS = {"all": "every kernel", "ops": "chain kernels off", "none": "nothing served"}
SKIP_ROUNDS = 1   # the first round (first-use checks, the allocator's first blocks) is not timed
MIN_ROUNDS = 6    # timed rounds needed for a verdict
MAX_ROUNDS = 16   # then the check stops the script
MAX_S = 30.0      # or after this long, once MIN_ROUNDS are in
MAX_RUNS = 4      # the script runs again while its runs gave fewer than MAX_ROUNDS rounds,
MORE_S = 60.0     # for this long at most
# An arm beats another when its forwards are faster by a margin (the median over rounds of the two
# arms' ratio) and a one-sided Wilcoxon signed-rank test on the rounds' log ratios gives p below
# its bar: a clear gap, or a small one that (nearly) every round shows (the UNet's chains cost it
# 2.1% on an H100 with p < 0.001). Serving nothing must clear more: every kernel passed its own
# speed guard, and it takes them all away.
BARS = {"ops": ((0.03, 0.05), (0.01, 0.002)), "none": ((0.05, 0.02), (0.02, 0.001))}


class ForwardArms(OutermostForwards):
    """Before each outermost forward, serve as the schedule says (rounds of the arms, every other
    one reversed, so that a load that grows or fades weighs on each arm alike); time it (CUDA
    events on the current stream when the model is on a GPU: the GPU's timeline covers both a
    host-bound and a device-bound forward; else wall time). Forwards that overlap on several
    threads cannot be given an arm each: then nothing is judged. on_done runs once judged."""

    def __init__(self, arms, on_done):
        # after the untimed round, hooks on the modules that ran it alone (_forwards.py)
        super().__init__(narrow_after=SKIP_ROUNDS * len(arms))
        self.arms = list(arms)
        self.on_done = on_done
        self.n = 0          # outermost forwards started
        self.samples = []   # [round, arm, start, end] (perf_counter seconds, or CUDA events)
        self.cuda = None
        self.t0 = None
        self.done = False
        self.overlap = False

    def arm_of(self, i):
        r, k = divmod(i, len(self.arms))
        return r, (self.arms if r % 2 == 0 else self.arms[::-1])[k]

    def _serve(self, arm):
        import kernel_forge as kf

        (kf.enable if arm != "none" else kf.disable)()
        (kf.enable_chains if arm == "all" else kf.disable_chains)()

    def _now(self):
        if self.cuda:
            import torch

            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def begin(self, mod):
        self.overlap = self.overlap or self.active > 1
        if self.done:
            return
        if self.cuda is None:
            p = next(mod.parameters(), None)
            self.cuda = bool(p is not None and p.is_cuda)
            self.t0 = time.perf_counter()
        r, arm = self.arm_of(self.n)
        self._serve(arm)
        self.samples.append([r, arm, self._now(), None])
        self.n += 1

    def end(self):
        if self.done or not self.samples or self.samples[-1][3] is not None:
            return None
        self.samples[-1][3] = self._now()
        timed = self.n // len(self.arms) - SKIP_ROUNDS
        if self.n % len(self.arms) == 0 and (timed >= MAX_ROUNDS or (
                timed >= MIN_ROUNDS and time.perf_counter() - self.t0 > MAX_S)):
            self.finish()
            return self.on_done
        return None

    def finish(self):
        """Serve everything again; the timed forwards as [round, arm, ms]."""
        if self.done:
            return self.result
        self.done = True
        self._serve("all")
        if self.cuda:
            import torch

            torch.cuda.synchronize()
        rows = []
        for r, arm, a, b in [] if self.overlap else self.samples:
            if b is None or r < SKIP_ROUNDS:
                continue
            ms = a.elapsed_time(b) if self.cuda else 1e3 * (b - a)
            rows.append([r, arm, ms])
        self.result = rows
        return rows


def signed_rank_p(d: list) -> float:
    """One-sided p of a Wilcoxon signed-rank test that the values `d` lean above 0 (the normal
    approximation with a continuity correction; ties get their average rank; zeros dropped)."""
    d = [x for x in d if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(d[i]))
    rank = [0.0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(d[order[j + 1]]) == abs(d[order[i]]):
            j += 1
        for k in range(i, j + 1):
            rank[order[k]] = (i + j) / 2 + 1
        i = j + 1
    w = sum(r for r, x in zip(rank, d) if x > 0)
    mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return 0.5 * math.erfc((w - mean - 0.5) / sd / math.sqrt(2))


def beats(rows, a: str, b: str, bar: str):
    """Whether arm a's forwards are faster than arm b's by the bar of `bar` ("ops" or "none"),
    paired by round: (yes, median of b / a, p, rounds)."""
    by = {}
    for r, arm, ms in rows:
        by.setdefault(r, {}).setdefault(arm, []).append(ms)
    ratios = [statistics.median(v[b]) / statistics.median(v[a]) for v in by.values()
              if v.get(a) and v.get(b) and min(v[a]) > 0 and min(v[b]) > 0]
    if not ratios:
        return False, 1.0, 1.0, 0
    med = statistics.median(ratios)
    p = signed_rank_p([math.log(x) for x in ratios])
    return any(med > 1 + m and p < pb for m, pb in BARS[bar]), med, p, len(ratios)


def complete_rounds(rows, arms) -> int:
    seen = {}
    for r, arm, _ in rows:
        seen.setdefault(r, set()).add(arm)
    return sum(1 for v in seen.values() if set(arms) <= v)


def verdict(rows, arms) -> dict:
    """What to keep: "all", "ops" (chain kernels disabled) or "none" (every served kernel
    disabled), with each arm's median ms per forward and the comparisons that decided."""
    rounds = complete_rounds(rows, arms)
    ms = {a: statistics.median([m for _, arm, m in rows if arm == a]) for a in arms
          if any(arm == a for _, arm, _ in rows)}
    out = {"rounds": rounds, "forwards": len(rows), "ms": ms, "keep": "all", "compared": []}
    if rounds < MIN_ROUNDS:
        out["why"] = f"{rounds} timed rounds of forwards, {MIN_ROUNDS} needed: not judged"
        return out

    def compare(x, y, bar):
        yes, med, p, n = beats(rows, x, y, bar)
        out["compared"].append({"faster": x, "than": y, "ratio": med, "p": p, "rounds": n,
                                "decided": yes})
        return yes

    # the least taken away that is not clearly slower: chains off where that beats everything
    # served, or where nothing served does and is not clearly faster than chains off
    ops = "ops" in arms and compare("ops", "all", "ops")
    none = compare("none", "all", "none")
    cur = "all"
    if ops or none:
        cur = "ops" if "ops" in arms else "none"
        if cur == "ops" and none and compare("none", "ops", "none"):
            cur = "none"
    out["keep"] = cur
    return out


def merge(acc: dict | None, res: dict) -> dict:
    """A further check run's result added to the earlier ones' (its rounds after theirs)."""
    if acc is None:
        return dict(res, runs=1)
    base = 1 + max((r for r, _, _ in acc["rows"]), default=0)
    acc["rows"] += [[base + r, arm, ms] for r, arm, ms in res["rows"]]
    if res["arms"] != acc["arms"]:  # a chain entry went away: compare what both runs had
        acc["arms"] = [a for a in acc["arms"] if a in res["arms"]]
    for kind in ("ops", "chains"):
        have = {e["key"]: e for e in acc["served"][kind]}
        for e in res["served"][kind]:
            if e["key"] in have:
                have[e["key"]]["served"] += e["served"]
            else:
                acc["served"][kind].append(e)
    acc["runs"] += 1
    acc["overlap"] = acc.get("overlap") or res.get("overlap")
    acc["cuda"] = acc.get("cuda") or res.get("cuda")
    return acc


def wants_more(res: dict, spent_s: float) -> bool:
    """Another run of the script: while too few rounds and time is left, unless every kernel
    served is already faster than each other arm (the median ratio: more rounds would not
    disable anything)."""
    v = verdict(res["rows"], res["arms"])
    if v["rounds"] >= MIN_ROUNDS and all(c["ratio"] <= 1.0 for c in v["compared"]):
        return False
    return v["rounds"] < MAX_ROUNDS and spent_s < MORE_S and res["runs"] < MAX_RUNS


def served_now() -> dict:
    """The cache entries this process served: op entries (by their rows' signatures, or the
    family entry) and chain entries, with the calls each served. A chain entry counts once its
    head came, served or not: one whose runs never complete is still observed there, at a cost
    the chain kernels' arm measured (RecurrentGemma's norm, recorded with a cast that follows it
    at some places only: 5 observed heads a forward, 5% of the tiny model on a CPU)."""
    import kernel_forge as kf

    rows = [r for r in kf.stats() if r.get("served")]
    sigs = {(r["op"], r["signature"]): r["served"] for r in rows}
    fams = {r["family_entry"]: r["served"] for r in rows if r.get("family_entry")}
    ops = []
    for e in kf.cache_entries():
        n = sigs.get((e["op"], e["signature"])) or fams.get(e["key"])
        if n and e["op"] != "kforge::chain" and not e.get("disabled"):
            ops.append({"key": e["key"], "signature": e["signature"], "served": n})
    chains = [{"key": c["cache_key"], "signature": "chain: " + c["ops"], "served": c["heads"]}
              for c in kf.chain_entries()
              if c.get("cache_key") and (c.get("heads") or c.get("observed"))]
    return {"ops": ops, "chains": chains}


def child_check(out: str, script_args: list[str]) -> int:
    """The check run (a child of kforge warmup): the script with ForwardArms installed; writes
    {"arms", "rows", "cuda", "served", "stopped"} to `out`. Stops the script once judged."""
    import kernel_forge as kf
    from ._warmup import run_script

    module = script_args[0] == "-m"
    if module:
        script_args = script_args[1:]
    arms = ARMS if kf.chain_entries() or _cache_has_chains() else ("all", "none")
    state = {"stopped": False}

    def write():
        doc = {"arms": list(arms), "rows": fa.finish(), "cuda": bool(fa.cuda),
               "served": served_now(), "stopped": state["stopped"], "overlap": fa.overlap}
        with open(out, "w") as f:
            json.dump(doc, f)

    def done():  # judged: the rest of the script is not needed
        state["stopped"] = True
        fa.remove()
        write()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    fa = ForwardArms(arms, done)
    fa.install()
    try:
        code = run_script(script_args[0], script_args[1:], module)
    finally:
        fa.remove()
        if not fa.done:
            write()
    return code


def _cache_has_chains() -> bool:
    import kernel_forge as kf

    return any(e["op"] == "kforge::chain" and not e.get("disabled") for e in kf.cache_entries())


def apply(res: dict, cache_dir: str, disable) -> dict:
    """The parent's side: the verdict on a check run's result, and the entries it disables
    (disable(cache_dir, key, why) -> '' or an error)."""
    v = verdict(res.get("rows", []), res.get("arms", ARMS))
    v["disabled"], v["errors"] = [], []
    if res.get("overlap"):
        v.update(keep="all", why="the script ran forwards on several threads at once: not judged")
    if v["keep"] == "all":
        return v
    ms = ", ".join(f"{v['ms'][a]:.3f} ms with {LABELS[a]}" for a in ARMS if a in v["ms"])
    why = (f"the model's forwards ran faster without it (the model check, "
           f"{v['rounds']} rounds, medians: {ms})")
    served = res.get("served", {})
    gone = served.get("chains", []) + (served.get("ops", []) if v["keep"] == "none" else [])
    for e in gone:
        err = disable(cache_dir, e["key"], why)
        (v["errors"] if err else v["disabled"]).append(dict(e, error=err) if err else e)
    v["why"] = why
    return v
