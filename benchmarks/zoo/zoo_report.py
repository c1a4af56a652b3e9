"""The zoo's report: the table, the summary, the per-model lines, and merging several runs.

Noise: a model is slower than eager beyond the noise when its speedup is below 1 - max(3%, the
spread of its eager processes, that of its plugin processes); above 1 + that margin it is faster
(bold in the table). A spread is (max - min) / median over a variant's fresh processes.
"""

from __future__ import annotations

import json
import os
import statistics

FAMILIES = ["cnn", "vit", "encoder", "decoder-prefill", "decoder-decode", "speech", "diffusion"]
TOLERANCE = {"bf16": 5e-2, "f16": 2e-2, "f32": 1e-3}  # max|x - eager| / max|eager| (benchmarks/e2e)
NOISE_FLOOR = 0.03  # below this spread between two eager processes, 3% is still called noise


def check_text(c: dict | None, dtype: str | None) -> str:
    if not c:
        return "-"
    if "error" in c:
        return "MISMATCH: " + c["error"]
    if "equal_share" in c:
        return f"tokens {100 * c['equal_share']:.0f}% equal"
    tol = TOLERANCE.get(dtype or "", 5e-2)
    ok = c["finite"] and c["rel"] <= tol
    return f"{'ok' if ok else 'MISMATCH'} ({c['rel']:.1e})"


def fmt(v, f="{:.2f}"):
    return "-" if v is None else f.format(v)


def verdict(r: dict) -> str | None:
    """'slower' when the plugin's time is beyond the noise: its speedup below 1 - max(3%, the
    spreads of the eager and of the plugin processes); 'faster' above 1 + that."""
    if r.get("speedup") is None:
        return None
    noise = max(NOISE_FLOOR, r.get("eager_spread") or 0.0, r.get("plugin_spread") or 0.0)
    return "slower" if r["speedup"] < 1 - noise else ("faster" if r["speedup"] > 1 + noise else "same")


def summary(results: list[dict]) -> list[str]:
    measured = [r for r in results if r.get("speedup") is not None]
    lines = []
    if not measured:
        return ["No model was measured with the plugin."]
    sp = sorted(r["speedup"] for r in measured)
    served = [r for r in measured if r.get("served_signatures")]
    slower = [r["model"] for r in measured if verdict(r) == "slower"]
    lines.append(f"{len(measured)} of {len(results)} models measured with the plugin; median "
                 f"speedup over eager {statistics.median(sp):.2f}x (min {sp[0]:.2f}x, max "
                 f"{sp[-1]:.2f}x); {len(served)} of {len(measured)} served at least one kernel.")
    lines.append("Slower than eager beyond the noise (speedup < 1 - max(3%, eager and plugin spreads)): "
                 + (", ".join(slower) if slower else "none") + ".")
    ab = sorted(r["ab_speedup"] for r in measured if r.get("ab_speedup") is not None)
    if ab:
        lines.append(f"In one process, the plugin enabled vs disabled in turn (`in-process x`): "
                     f"median {statistics.median(ab):.3f}x (min {ab[0]:.3f}x, max {ab[-1]:.3f}x) "
                     f"over {len(ab)} models.")
    comp = [r["compile_speedup"] for r in results if r.get("compile_speedup")]
    if comp:
        lines.append(f"torch.compile: median {statistics.median(comp):.2f}x over eager "
                     f"({len(comp)} models).")
    failed = [f"{r['model']} ({r['status']})" for r in results if r["status"] != "ok"]
    if failed:
        lines.append("Failed: " + "; ".join(failed) + ".")
    return lines


def speedup_text(r: dict) -> str:
    v = verdict(r)
    if v is None:
        return "-"
    x = f"{r['speedup']:.2f}x"
    return f"**{x}**" if v == "faster" else (f"{x} (slower)" if v == "slower" else x)


def table(results: list[dict]) -> str:
    head = ["model", "family", "dtype", "eager ms", "plugin ms", "speedup", "in-process x",
            "served sigs (calls)",
            "compile ms", "compile x", "warm-up s", "inserted / tuned", "eager spread",
            "plugin output", "notes"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        ms = r.get("eager_ms")
        note = "; ".join(r.get("notes", []))
        if r["status"] != "ok" and not note:
            note = r["status"]
        if r.get("unit", "forward") != "forward":
            note = (f"ms per {r['unit']}" + ("; " + note if note else ""))
        if r.get("stopped"):
            note += ("; " if note else "") + f"{len(r['stopped'])} kernels stopped in process"
        cells = [r["model"], r.get("family") or "-", r.get("dtype") or "-", fmt(ms, "{:.3f}"),
                 fmt(r.get("plugin_ms"), "{:.3f}"),
                 speedup_text(r), fmt(r.get("ab_speedup"), "{:.3f}x"),
                 "-" if r.get("served_signatures") is None
                 else f"{r['served_signatures']} ({r['served_calls']})",
                 fmt(r.get("compile_ms"), "{:.3f}"), fmt(r.get("compile_speedup"), "{:.2f}x"),
                 fmt(r.get("warmup_s"), "{:.0f}"),
                 "-" if r.get("tuned") is None else f"{r['inserted']} / {r['tuned']}",
                 fmt(r.get("eager_spread"), "{:.1%}"),
                 check_text(r.get("check_plugin"), r.get("dtype")), note.replace("|", "/")]
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(rows)


def details(r: dict) -> str:
    """One line per model under the table: what was served, what the warm-up found, the checks."""
    bits = []
    if r.get("eager_runs_ms"):
        bits.append("eager runs " + ", ".join(f"{v:.3f}" for v in r["eager_runs_ms"]) + " ms")
    if r.get("plugin_runs_ms") and len(r["plugin_runs_ms"]) > 1:
        bits.append("plugin runs " + ", ".join(f"{v:.3f}" for v in r["plugin_runs_ms"]) + " ms")
    if r.get("ab_runs"):
        bits.append(f"in-process enabled {r['ab_enabled_ms']:.3f} ms vs disabled "
                    f"{r['ab_disabled_ms']:.3f} ms, ratio per process "
                    + ", ".join(f"{v:.3f}" for v in r["ab_runs"])
                    + (" (of the 10th percentiles: " + ", ".join(f"{v:.3f}" for v in r["ab_p10_runs"])
                       + ")" if r.get("ab_p10_runs") else ""))
    if r.get("served_ops"):
        bits.append("served: " + ", ".join(f"{op} {n}" for op, n in r["served_ops"].items()))
    if r.get("chains"):
        bits.append("chains: " + "; ".join(
            f"{c.get('ops') or '?'} {c['state']}{' (' + c['stopped'] + ')' if c.get('stopped') else ''}"
            f" {c['completed']}/{c['heads']} heads completed"
            f"{', ' + str(c['skipped']) + ' skipped' if c.get('skipped') else ''}, kernel {fmt(c.get('kernel_us'), '{:.1f}')} us"
            f" vs eager {fmt(c.get('eager_us'), '{:.1f}')} us"
            + (f", {c['bytes_moved'] / 1e6:.2f} MB" if c.get("bytes_moved") else "")
            + (f", {c['copy_bw_pct']:.0f}% of copy bandwidth" if c.get("copy_bw_pct") else "")
            + (f" (members served {fmt(c['members_us'], '{:.1f}')} us)"
               if c.get("members_us") not in (None, c.get("eager_us")) else "") for c in r["chains"][:6]))
    if r.get("warmup_statuses"):
        bits.append("warm-up: " + ", ".join(f"{k} {v}" for k, v in r["warmup_statuses"].items()))
    if r.get("model_check"):
        bits.append(f"warm-up's model check: {r['model_check']}")
    if r.get("stopped"):
        bits.append("stopped in the plugin process: " + "; ".join(
            f"{x['signature'][:60]} ({x['stopped']})" for x in r["stopped"][:5]))
    if r.get("compile_ms") is not None:
        bits.append(f"torch.compile: first call {r.get('compile_first_s') or 0:.1f} s, output "
                    f"{check_text(r.get('check_compile'), r.get('dtype'))}, vs eager "
                    f"{fmt(r.get('compile_eager_ms'), '{:.3f}')} ms of its own run")
    return f"- {r['model']}: " + ("; ".join(bits) or r.get("status", "-")) + "."


def write(out: str, doc: dict):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "zoo.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = ["# Model zoo: eager, Kernel Forge after `kforge warmup`, torch.compile", ""]
    for run in doc["runs"]:
        v = run["env"]
        opts = f"options `{run['warmup_args']}`" if run["warmup_args"] else "default options"
        if run.get("steps"):  # a --compile-only run has no warm-up
            opts += f"; steps: {run['steps']}"
        md.append(f"- `{run['command']}` ({run['date']}, {run.get('wall_s', 0):.0f} s; "
                  f"{v.get('gpu') or 'no GPU'}; torch {v.get('torch')}, torchvision "
                  f"{v.get('torchvision')}, timm {v.get('timm')}, transformers "
                  f"{v.get('transformers')}; commit {v.get('commit')}; warm-up budget "
                  f"{run['budget']:g} s, {opts})")
    md += ["", table(doc["results"]), ""]
    md += summary(doc["results"])
    md += ["", "Each number comes from a fresh process: eager (kernel_forge not imported), the "
           "plugin (`import kernel_forge`) on the cache its `kforge warmup` filled, torch.compile. "
           "ms are medians of the script's timed forwards (CUDA events; `llama_decode`: one "
           "whole generation). Eager is the median of its processes, `eager spread` their "
           "(max - min) over that median (the plugin's likewise, with --plugin-runs > 1); a speedup "
           "in bold is above 1 + max(3%, those spreads), one marked slower below 1 - that. "
           "`served sigs (calls)`: signatures the plugin served in the timed process, and its "
           "served calls; `inserted / tuned`: the warm-up's signatures. `plugin output`: "
           "max|plugin - eager| / max|eager| over the last output (ok within bf16 5e-2, fp16 2e-2, "
           "f32 1e-3). `in-process x`: in each plugin process, blocks of forwards with "
           "kernel_forge.enable() and disable() in turn; disabled ms over enabled ms, the median "
           "over the plugin processes (free of process-to-process noise; the disabled side still "
           "pays the pass-through of intercepted calls, so it leaves that cost out); per model, "
           "the same ratio of the sides' 10th percentiles too, the forwards a shared host slowed "
           "least.", "",
           "Per model:", ""]
    md += [details(r) for r in doc["results"]]
    with open(os.path.join(out, "zoo.md"), "w") as f:
        f.write("\n".join(md) + "\n")


PLUGIN_KEYS = ("eager_ms", "eager_runs_ms", "eager_spread", "plugin_ms", "plugin_runs_ms",
               "plugin_spread", "speedup", "ab_runs", "ab_p10_runs", "ab_speedup", "ab_enabled_ms",
               "ab_disabled_ms",
               "served_signatures", "served_calls", "served_ops", "cache_entries", "stopped",
               "chains", "check_plugin", "warmup_s", "inserted", "tuned", "warmup_statuses",
               "model_check")
COMPILE_KEYS = ("compile_ms", "compile_eager_ms", "compile_speedup", "compile_first_s",
                "check_compile")


def merge_results(docs: list[dict]) -> list[dict]:
    """One row per model over several runs, in order: the plugin's columns (with the eager they
    were measured against) from the last run that measured the plugin, torch.compile's from the
    last that measured it (its speedup is against that run's own eager processes)."""
    by_model = {}
    for doc in docs:
        for r in doc["results"]:
            m = by_model.get(r["model"])
            if m is None or (m.get("eager_ms") is None and r.get("eager_ms") is not None):
                by_model[r["model"]] = json.loads(json.dumps(r))  # the first row with numbers
                continue
            if r.get("eager_ms") is None:  # skipped or failed there: the numbers stand
                continue
            if r.get("plugin_ms") is not None:
                for k in PLUGIN_KEYS:
                    m[k] = r.get(k)
            if r.get("compile_ms") is not None:
                for k in COMPILE_KEYS:
                    m[k] = r.get(k)
            for k in ("family", "summary", "unit", "dtype", "device", "gpu"):
                m[k] = r.get(k) or m.get(k)
            m["notes"] += [n for n in r.get("notes", []) if n not in m["notes"]]
            m.setdefault("later_steps", []).append(r.get("steps", {}))
            if r.get("status") == "ok" or m.get("status") != "ok":
                m["status"] = r.get("status", m.get("status"))
    rank = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(by_model.values(), key=lambda r: (rank.get(r.get("family"), 99), r["model"]))
