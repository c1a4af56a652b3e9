"""The e2e report: per-op rows joined from the plugin's stats and the warm-up's rows, the
end-to-end row, and the Markdown page. Pure functions of plain dicts (unit-tested on CPU).

Sources, all keyed by the signature key:
- profile: kernel_forge.stats() after `n` forwards with the plugin on and no kernel yet (every
  call eager): calls per forward and eager time per call, in this process;
- final: kernel_forge.stats() over recorded plugin forwards after the timed rounds, with the warm
  cache: served calls, time per served call, speed-guard flags;
- warm: the warm-up's rows (the forge worker's eager/best times, status, iterations);
- record: the warm-up's recording run (the share its --min-share was applied to);
- entries: the cache entries (disabled ones carry the first-use check's reason), by signature.
"""

from __future__ import annotations

import statistics

WARM_STATUS = {
    "no_faster_kernel": "no faster kernel",
    "no_template": "no template for this op/signature",
    "no_correct_kernel": "no correct kernel found",
    "found": "found, not inserted",
}

# eager's rounds vs its time before the warm-up: beyond this, the machine's load changed
EAGER_DRIFT = 0.15


def _med(xs):
    return statistics.median(xs) if xs else None


def _ratio(a, b):
    return a / b if a and b else None


def outcome(prof: dict, final: dict | None, warm: dict | None, rec: dict | None,
            entry: dict | None, *, min_share: float, max_jobs: int,
            ops: list[str] | None = None, untuned: str | None = None) -> tuple[bool, str]:
    """(served, why): "served", or why the signature kept running eager. `untuned`: why no
    signature without a warm-up row was tuned, when the warm-up was skipped or stopped."""
    final = final or {}
    if final.get("served", 0) > 0 and final.get("has_kernel"):
        return True, "served"
    if final.get("served_slower"):
        return False, "slower in process (speed guard)"
    if entry and entry.get("disabled"):
        return False, f"rejected on first use: {entry.get('disabled_reason') or 'no reason given'}"
    if warm:
        st = warm.get("status") or ""
        if st == "inserted":
            return False, ("inserted, not called after the rounds" if not final.get("calls")
                           else "inserted, not served in this process")
        prefix = f"not tuned: {prof.get('signature')}: "  # the signature is in its own column
        return False, WARM_STATUS.get(st, "not tuned: " + st[len(prefix):] if st.startswith(prefix)
                                      else st or "not tuned")
    if not prof.get("servable", True):
        return False, ("not servable: " + prof["unservable_reason"] if prof.get("unservable_reason")
                       else "not servable (an argument or output a kernel cannot take)")
    if ops and prof.get("op") not in ops:
        return False, "not tuned (not in --ops)"
    if prof.get("has_kernel"):
        return False, "had a kernel before the warm-up, not served"
    if untuned:
        return False, untuned
    share = (rec or prof).get("share", 0.0)
    if share >= min_share:
        return False, (f"not tuned (beyond --max-jobs {max_jobs})" if max_jobs
                       else "not tuned (not a warm-up candidate)")
    return False, (f"not hot enough ({100 * share:.1f}% of the recorded op time < "
                   f"{100 * min_share:g}%)")


def op_rows(profile: list[dict], final: list[dict], warm: list[dict], record: list[dict],
            entries: list[dict], *, n_profile: int, eager_fwd_ms: float | None,
            min_share: float, max_jobs: int, ops: list[str] | None = None,
            untuned: str | None = None) -> list[dict]:
    """One row per intercepted signature the profile saw, hottest (share of eager) first.

    Profile rows may carry "bytes_moved" and "bw_gbs" (copy bandwidth measured in this process)
    for the % of copy bandwidth."""
    fin = {r["key"]: r for r in final}
    wrm = {r["key"]: r for r in warm}
    rec = {r["key"]: r for r in record}
    ent = {e["signature"]: e for e in entries}
    out = []
    for p in profile:
        if not p.get("intercepted", True):
            continue
        key = p["key"]
        f, w = fin.get(key), wrm.get(key)
        served, why = outcome(p, f, w, rec.get(key), ent.get(p["signature"]),
                              min_share=min_share, max_jobs=max_jobs, ops=ops,
                              untuned=untuned)
        per_fwd = p["calls"] / n_profile if n_profile else None
        eager_us = p["eager_us"] if p.get("eager_us", -1) > 0 else None
        forged_us = f["served_us"] if served and f.get("served_us", -1) > 0 else None
        share = (per_fwd * eager_us / (1e3 * eager_fwd_ms)
                 if per_fwd and eager_us and eager_fwd_ms else None)
        roof_us = (p["bytes_moved"] / (p["bw_gbs"] * 1e3)
                   if p.get("bytes_moved") and p.get("bw_gbs") else None)
        out.append({
            "op": p["op"], "signature": p["signature"], "key": key,
            "calls_per_forward": per_fwd, "share_of_eager": share,
            "share_of_intercepted": p.get("share"),
            "eager_us": eager_us, "forged_us": forged_us, "speedup": _ratio(eager_us, forged_us),
            "bytes_moved": p.get("bytes_moved"),
            "eager_bw_pct": 100 * roof_us / eager_us if roof_us and eager_us else None,
            "forged_bw_pct": 100 * roof_us / forged_us if roof_us and forged_us else None,
            "served": served, "outcome": why,
            "served_calls": (f or {}).get("served", 0), "eager_calls": (f or {}).get("fallback", 0),
            "worker": None if w is None else {
                k: w.get(k) for k in ("status", "eager_us", "best_us", "speedup", "roofline_pct",
                                      "iterations", "wall_s")},
        })
    out.sort(key=lambda r: (-(r["share_of_eager"] or 0), -(r["calls_per_forward"] or 0),
                            r["signature"]))
    return out


def amdahl_ms(rows: list[dict], eager_fwd_ms: float | None) -> float | None:
    """The forward time the per-op times predict: eager minus what served kernels save."""
    if not eager_fwd_ms:
        return None
    saved_us = sum(r["calls_per_forward"] * (r["eager_us"] - r["forged_us"])
                   for r in rows if r["served"] and r["forged_us"] and r["eager_us"])
    return eager_fwd_ms - saved_us / 1e3


def e2e_row(times: dict[str, list[float]], rounds: dict[str, list[float]] | None = None,
            host: dict[str, list[float]] | None = None) -> dict:
    """Medians over every timed forward of each variant, and speedups against eager; `host`:
    each forward's time to issue it on the host (harness.Setup.time_ms)."""
    med = {k: _med(v) for k, v in times.items()}
    e = med.get("eager")
    row = {"eager_ms": e, "plugin_ms": med.get("plugin"), "compile_ms": med.get("compile"),
           "plugin_speedup": _ratio(e, med.get("plugin")),
           "compile_speedup": _ratio(e, med.get("compile")),
           "forwards": {k: len(v) for k, v in times.items()}}
    if rounds:
        row["round_medians_ms"] = {k: [round(x, 4) for x in v] for k, v in rounds.items()}
    if host:
        row["host_ms"] = {k: _med(v) for k, v in host.items() if v}
    return row


CHAIN_COUNTERS = ("heads", "completed", "dropped", "skipped")


def chain_rows(before: list[dict], after: list[dict], forwards: int,
               warmup_rows: list[dict] | None = None) -> list[dict]:
    """The chain kernels attached (kernel_forge.chain_entries()), their counters over the
    plugin's timed forwards (`after` minus `before`), per forward: each completed chain ran one
    kernel where eager ran one call per member. With the warm-up's rows, the bytes its kernel
    moves (its job's) and its share of the copy bandwidth at its fastest in-process time
    (`kernel_us`, the speed guard's): the roofline time of those bytes over that time."""
    old = {e["sig_hex"]: e for e in before}
    tuned = {r["entry_key"]: r for r in warmup_rows or [] if r.get("entry_key")}
    rows = []
    for e in after:
        b = old.get(e["sig_hex"], {})
        n = {k: e.get(k, 0) - b.get(k, 0) for k in CHAIN_COUNTERS}
        members = len(e["ops"].split(" -> "))
        w = tuned.get(e.get("cache_key"), {})
        k_us, roof = e.get("kernel_us") or -1, w.get("roofline_us")
        rows.append({"ops": e["ops"], "members": members, "state": e["state"],
                     "reason": e.get("reason", ""), "stopped": e.get("stopped", ""),
                     **{k: v / forwards if forwards else None for k, v in n.items()},
                     "kernel_us": e.get("kernel_us"), "eager_us": e.get("eager_us"),
                     "bytes_moved": w.get("bytes_moved"),
                     "copy_bw_pct": 100 * roof / k_us if roof and k_us > 0 else None,
                     "launches_saved": n["completed"] * (members - 1) / forwards if forwards else None})
    return sorted(rows, key=lambda r: -(r["completed"] or 0))


def compare(out, ref, tolerance: float) -> dict:
    """max |out - ref|, relative to max |ref| (rounding differences add up along a network, so
    one norm-wise bound for the whole output rather than an element-wise one)."""
    import torch

    a, b = out.detach().float(), ref.detach().float()
    if a.shape != b.shape:
        return {"ok": False, "error": f"shape {tuple(a.shape)} vs eager {tuple(b.shape)}"}
    finite = bool(torch.equal(torch.isfinite(a), torch.isfinite(b)))
    diff = (a - b).abs().nan_to_num(0.0)
    max_abs = float(diff.max()) if diff.numel() else 0.0
    scale = float(b.abs().nan_to_num(0.0).max()) if b.numel() else 0.0
    rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    return {"ok": finite and rel <= tolerance, "max_abs": max_abs, "max_rel": rel,
            "max_abs_eager": scale, "tolerance": tolerance, "same_nonfinite": finite}


# ---- Markdown ----

def _f(v, fmt="{:.1f}", none="-"):
    return none if v is None else fmt.format(v)


def _short(s, n=70):
    s = s.replace("|", "\\|")
    return s if len(s) <= n else s[: n - 3] + "..."


def _table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _bw(r):
    if r["eager_bw_pct"] is None:
        return "-"
    s = f"{r['eager_bw_pct']:.0f}%"
    return s + (f" -> {r['forged_bw_pct']:.0f}%" if r["forged_bw_pct"] is not None else "")


def _worker(w):
    if not w or not w.get("iterations"):
        return "-"
    return (f"{_f(w.get('eager_us'))} / {_f(w.get('best_us'))} us, {w['iterations']} it, "
            f"{_f(w.get('wall_s'), '{:.0f}')} s")


def markdown(res: dict, top: int = 30) -> str:
    env, e2e = res.get("env", {}), res.get("e2e") or {}
    what = [res[k] for k in ("summary",) if res.get(k)]
    what += [f"dtype {res['dtype']}"] if res.get("dtype") else []
    what += [f"device {res.get('device')}"] + (["**tiny sizes**"] if res.get("tiny") else [])
    what += [f"layers {res['layers']}"] if res.get("layers") else []
    out = [f"# End to end: {res['model']}", "", ", ".join(what) + ".", "",
           f"`{res.get('command', '')}`", "",
           f"{env.get('gpu') or env.get('cpu') or ''}, driver {env.get('driver') or '-'}, torch "
           f"{env.get('torch')}, {env.get('date')}", ""]
    if e2e:
        out += ["## End to end (median ms per forward, alternating rounds in one process)", ""]
        row = [_f(e2e.get("eager_ms"), "{:.3f}"), _f(e2e.get("plugin_ms"), "{:.3f}"),
               _f(e2e.get("compile_ms"), "{:.3f}"), _f(e2e.get("plugin_speedup"), "{:.3f}x"),
               _f(e2e.get("compile_speedup"), "{:.3f}x")]
        out += [_table(["workload", "eager ms", "plugin ms", "torch.compile ms", "plugin speedup",
                        "compile speedup"], [[res["model"]] + row]), ""]
    notes = []
    chk = (res.get("check") or {}).get("plugin")
    if chk:
        notes.append(f"plugin output vs eager: max abs err {_f(chk.get('max_abs'), '{:.3g}')}, "
                     f"relative to max |eager| {_f(chk.get('max_rel'), '{:.3g}')} (tolerance "
                     f"{chk['tolerance']:g}): **{'match' if chk['ok'] else 'MISMATCH'}**")
    cchk = (res.get("check") or {}).get("compile")
    if cchk and "max_rel" in cchk:
        notes.append(f"torch.compile output vs eager: relative error {cchk['max_rel']:.3g}")
    sv = res.get("served") or {}
    if sv:
        notes.append(f"served: {sv.get('calls', 0)} calls of {sv.get('signatures', 0)} signatures "
                     "in the recorded plugin forwards after the rounds")
    if res.get("amdahl_plugin_ms"):
        notes.append(f"predicted from the per-op times: {res['amdahl_plugin_ms']:.3f} ms")
    hm = e2e.get("host_ms") or {}
    if hm.get("eager") and hm.get("plugin"):
        notes.append("host time to issue a forward (median ms; near the forward's own time, the "
                     "host bounds it): " + ", ".join(f"{k} {v:.3f}" for k, v in hm.items()))
    if e2e.get("eager_before_warmup_ms"):
        notes.append(f"eager before the warm-up: {e2e['eager_before_warmup_ms']:.3f} ms")
        st = res.get("settle")
        if st and st.get("eager_medians_ms"):
            notes.append(f"before the rounds, eager back to it in {st['s']:.1f} s ("
                         + ", ".join(f"{m:.3f}" for m in st["eager_medians_ms"]) + " ms)")
        drift = e2e["eager_ms"] / e2e["eager_before_warmup_ms"] - 1 if e2e.get("eager_ms") else 0
        if abs(drift) > EAGER_DRIFT:
            notes.append(f"**eager moved {100 * drift:+.0f}% between before the warm-up and the "
                         "rounds: the machine's load changed (another process or lane on the "
                         "host?); only the ratios within the rounds compare**")
    notes += res.get("notes", [])
    out += [f"- {n}" for n in notes] + ([""] if notes else [])

    w = res.get("warmup") or {}
    if w:
        out += ["## Warm-up (`kforge warmup`, builtin templates"
                + (", LLM" if w.get("llm") else "") + ")", ""]
        line = (f"{w.get('planned', 0)} signatures planned, {w.get('jobs', 0)} searched, "
                f"{w.get('inserted', 0)} inserted; wall "
                f"{_f(w.get('wall_s'), '{:.0f}')} s (search {_f(w.get('search_s'), '{:.0f}')} s), "
                f"budget {_f(w.get('budget_s'), '{:.0f}')} s, proposer {w.get('proposer')}")
        if w.get("llm"):
            u = w["llm"]
            line += (f"; LLM: {u['requests']} requests, {int(u['input_tokens'])} + "
                     f"{int(u['output_tokens'])} tokens, ${u['cost_usd']:.4f}")
        out += [line + ".", ""]
        if w.get("error"):
            out += [f"Warm-up error: {w['error']}", ""]

    ops = res.get("ops") or []
    if ops:
        out += ["## Per op (intercepted signatures, by share of the eager forward)", ""]
        body = [[r["op"].split("::")[-1], f"`{_short(r['signature'])}`",
                 _f(r["share_of_eager"] and 100 * r["share_of_eager"], "{:.1f}%"),
                 _f(r["calls_per_forward"], "{:g}"), _f(r["eager_us"]), _f(r["forged_us"]),
                 _f(r["speedup"], "{:.2f}x"), _bw(r), _worker(r["worker"]), r["outcome"]]
                for r in ops[:top]]
        out += [_table(["op", "signature", "share of eager", "calls/fwd", "eager us", "forged us",
                        "speedup", "% copy BW", "search: eager / best (worker)", "outcome"], body)]
        if len(ops) > top:
            out += ["", f"{len(ops) - top} more signatures in the JSON."]
        total = sum(r["share_of_eager"] or 0 for r in ops)
        out += ["", f"Intercepted ops hold {100 * total:.1f}% of the eager forward; the rest is "
                "ops the plugin does not intercept (matmuls, convolutions, attention) and gaps.",
                ""]

    chains = res.get("chains") or []
    if chains:
        out += ["## Chains (kernel_forge.chain_entries(), per timed plugin forward)", ""]
        body = [[f"`{_short(c['ops'], 90)}`", c["state"] + (f" ({c['reason']})" if c["reason"] else ""),
                 _f(c["heads"], "{:g}"), _f(c["completed"], "{:g}"), _f(c["dropped"], "{:g}"),
                 _f(c["skipped"], "{:g}"), _f(c["kernel_us"] if (c["kernel_us"] or -1) > 0 else None),
                 _f(c["eager_us"] if (c["eager_us"] or -1) > 0 else None),
                 _f(c.get("bytes_moved") and c["bytes_moved"] / 1e6, "{:.2f}"),
                 _f(c.get("copy_bw_pct"), "{:.0f}%"),
                 _f(c["launches_saved"], "{:g}")] for c in chains]
        out += [_table(["chain", "state", "heads", "completed", "dropped", "skipped",
                        "kernel us (fastest)", "members' eager us", "MB moved", "% copy BW",
                        "launches saved"], body), ""]

    cs = res.get("cold_start")
    if cs:
        out += ["## Cold start (fresh processes, warm cache)", ""]
        body = []
        base = None
        for mode, m in (cs.get("modes") or {}).items():
            if "error" in m:
                body.append([mode, m["error"], "", "", "", "", ""])
                continue
            if mode == "none":
                base = m
                continue
            fe, fp = m.get("fresh_eager_ms"), m.get("fresh_plugin_ms")
            body.append([mode, _f(m.get("to_first_served_s"), "{:.2f} s", "never"),
                         _f(m.get("first_forward_ms"), "{:.1f}"),
                         _f(m.get("steady_forward_ms"), "{:.2f}"),
                         str(m.get("forwards_until_served") or "-"),
                         _f(m.get("to_model_built_s"), "{:.2f} s"),
                         f"{fe:.3f} / {fp:.3f} ({fe / fp:.3f}x)" if fe and fp else "-"])
        out += [_table(["KFORGE_VALIDATE", "process start -> first served kernel",
                        "first forward ms", "steady forward ms", "forwards until served",
                        "process start -> model built",
                        "then eager / plugin ms, alternating rounds"], body), ""]
        if base and cs.get("plugin_vs_no_plugin"):
            out += [f"A fresh process with `KFORGE_DISABLE=1` (the plugin loaded, nothing "
                    f"registered: torch's own kernels with no pass-through) runs eager at "
                    f"{base['fresh_eager_ms']:.3f} ms; the plugin with the warm cache "
                    f"(KFORGE_VALIDATE=first process above) is {cs['plugin_vs_no_plugin']:.3f}x "
                    f"that (across processes: noisier than the rounds within one).", ""]
        if cs.get("validation_cost_ms") is not None:
            k = cs.get("validation_forward", 1)
            out += [f"First-use validation costs a process {cs['validation_cost_ms']:.1f} ms "
                    f"(forward {k} with KFORGE_VALIDATE=first minus the same with =off).", ""]
        elif cs.get("note"):
            out += [cs["note"] + ".", ""]
    ph = res.get("phases") or {}
    if ph:
        out += ["Phase wall times: " + ", ".join(f"{k} {v:.0f} s" for k, v in ph.items()), ""]
    return "\n".join(out)
