"""Chain jobs: a recorded chain (kernel_forge.chains(), its "spec": docs/chains.md) as a job folder
for the forge worker, op "kforge::chain" (forge/job/chain.h): the kernel's inputs are the head's
tensor inputs then the externals, its outputs every member's outputs in member order.

The spec is untrusted (it comes from a recording, or from a caller): every member is checked
against the signature the plugin recorded for it (op, tensor count, and the dtype / sizes /
strides of every tensor the spec wires to it); a spec that does not hold is refused with a
reason naming the member and its op.
"""

from __future__ import annotations

import ctypes
import json
import os

import torch

from . import _jobs, _native
from ._jobs import NotTunable

CHAIN_OP = "kforge::chain"
MAX_MEMBERS = 12  # KF_CHAIN_MAX_MEMBERS = KF_JOB_MAX_OUTPUTS: a job's outputs, all members
EXTRA_OUTPUTS = 2  # KF_CHAIN_EXTRA_OUTPUTS: a member's outputs beyond its first (a norm's mean, rstd)
# members whose output's error, a sum's, the members downstream of them carry on
_REDUCTIONS = {"aten::sum.dim_IntList", "aten::mean.dim", "aten::amax", "aten::native_layer_norm",
               "aten::native_group_norm"}


def chain_sig_bytes(spec: dict) -> bytes:
    """The canonical chain bytes (docs/chains.md), as the plugin computes them (common/chain_sig.c
    owns them): refused with C's reason when the spec is malformed."""
    err = ctypes.create_string_buffer(512)
    p = _native.lib().kf_chain_sig_hex(json.dumps(spec).encode(), err, len(err))
    if not p:
        raise NotTunable(f"chain spec: {err.value.decode('utf-8', 'replace')}")
    try:
        return bytes.fromhex(ctypes.string_at(p).decode())
    finally:
        _native.lib().kf_free(p)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_spec(spec) -> None:
    """The spec's structure (chain.h's rules, as the worker checks them again): refuse with a
    reason naming the member and its op."""
    if not isinstance(spec, dict) or spec.get("version") != 1:
        raise NotTunable("chain spec: not a version 1 spec")
    members = spec.get("members")
    if not isinstance(members, list) or not 2 <= len(members) <= MAX_MEMBERS:
        raise NotTunable(f"chain spec: \"members\" must list 2..{MAX_MEMBERS} members")
    H, E = spec.get("n_head_inputs"), spec.get("n_ext")
    if not _is_int(H) or not _is_int(E) or H < 0 or E < 0:
        raise NotTunable("chain spec: n_head_inputs and n_ext must be non-negative integers")
    used_ext = set()
    for k, m in enumerate(members):
        op = m.get("op") if isinstance(m, dict) else None
        if not isinstance(op, str) or not op:
            raise NotTunable(f"chain spec: member {k} has no op")
        if not isinstance(m.get("sig_hex"), str):
            raise NotTunable(f"chain member {k} ({op}): no sig_hex")
        ins = m.get("inputs")
        if not isinstance(ins, list):
            raise NotTunable(f"chain member {k} ({op}): no inputs")
        if k == 0 and ins != [["head", i] for i in range(H)]:
            raise NotTunable(f"chain member 0 ({op}): its inputs must be the head's, "
                             f"[\"head\", 0..{H - 1}]")
        for i, r in enumerate(ins):
            ok = isinstance(r, list) and r and (
                (r[0] == "head" and len(r) == 2 and _is_int(r[1]) and 0 <= r[1] < H) or
                (r[0] == "member" and len(r) == 3 and _is_int(r[1]) and 0 <= r[1] < k and
                 r[2] == 0) or
                (r[0] == "ext" and len(r) == 2 and _is_int(r[1]) and 0 <= r[1] < E))
            if not ok:
                raise NotTunable(f"chain member {k} ({op}): inputs[{i}] = {r!r} is not "
                                 f"[\"head\", i < {H}], [\"member\", m < {k}, 0] or "
                                 f"[\"ext\", e < {E}]")
            if r[0] == "ext":
                used_ext.add(r[1])
    if used_ext != set(range(E)):
        raise NotTunable(f"chain spec: externals {sorted(set(range(E)) - used_ext)} are read by "
                         f"no member")
    views = spec.get("views", [])
    if not isinstance(views, list) or not all(
            isinstance(v, list) and len(v) == 3 and all(_is_int(x) for x in v) and
            0 <= v[0] < E and 0 <= v[1] < H for v in views) or \
            len({v[0] for v in views}) != len(views):
        raise NotTunable("chain spec: \"views\" must list [external, head input, byte offset], "
                         "each external once")
    if spec.get("deferred", True) is not True:
        raise NotTunable("chain spec: \"deferred\", when present, must be true")


def _same_layout(desc: dict, t: torch.Tensor) -> bool:
    return (desc["dtype"] == next((n for n, d in _jobs._TORCH_DTYPES.items() if d == t.dtype), None)
            and list(desc["sizes"]) == list(t.shape) and list(desc["strides"]) == list(t.stride()))


class _Member:
    """One member: its recorded signature, decoded arguments and op."""

    def __init__(self, k: int, m: dict, key: str):
        self.k, self.spec = k, m
        self.info, self.args = _jobs.describe(key)
        self.op = self.info["op"]
        if self.op != m["op"]:
            raise NotTunable(f"chain member {k} ({m['op']}): signature {key} is {self.op}")
        if self.info["sig_hex"] != m["sig_hex"]:
            raise NotTunable(f"chain member {k} ({self.op}): sig_hex differs from signature {key}")
        _jobs.check_tunable(self.info, self.args)
        self.fn = _jobs.resolve(self.op)
        self.tensors = _jobs.tensor_args(self.args)
        if len(self.tensors) != len(m["inputs"]):
            raise NotTunable(f"chain member {k} ({self.op}): the spec wires {len(m['inputs'])} "
                             f"tensor inputs, its signature has {len(self.tensors)}")
        outs = self.info["outputs"] or []
        self.n_out = len(outs)
        if not 1 <= len(outs) <= 1 + EXTRA_OUTPUTS:
            raise NotTunable(f"chain member {k} ({self.op}): {len(outs)} outputs; a chain member "
                             f"has 1 to {1 + EXTRA_OUTPUTS}")
        if any(o["alias_arg"] >= 0 for o in outs[1:]):
            raise NotTunable(f"chain member {k} ({self.op}): a later output aliases an argument")
        self.alias = outs[0]["alias_arg"]
        # a later member may write in place only its self, an earlier member's output (deferred
        # mode's bn -> relu_)
        if self.alias >= 0 and k > 0 and (self.alias != 0 or len(outs) != 1 or
                                          m["inputs"][0][0] != "member"):
            raise NotTunable(f"chain member {k} ({self.op}) writes in place: only the head may, or "
                             f"in deferred mode an in-place op its self, an earlier member's output")

    def call(self, tensors: list):
        for (name, desc), t in zip(self.tensors, tensors):
            if not _same_layout(desc, t):
                raise NotTunable(f"chain member {self.k} ({self.op}): input '{name}' is wired to a "
                                 f"{t.dtype} tensor of sizes {list(t.shape)} strides "
                                 f"{list(t.stride())}; the signature has {desc['dtype']} "
                                 f"{desc['sizes']} {desc['strides']}")
        return _jobs.call_from_args(self.fn, self.args, tensors)


def _wire(spec: dict, k: int, inputs: list, outs: list) -> list:
    """Member k's tensors: `outs` holds each earlier member's first output."""
    H = spec["n_head_inputs"]
    res = []
    for r in spec["members"][k]["inputs"]:
        res.append(inputs[r[1]] if r[0] == "head" else outs[r[1]] if r[0] == "member"
                   else inputs[H + r[1]])
    return res


def run_chain(spec: dict, members: list, inputs: list) -> list:
    """Every member's outputs, eager, from the kernel inputs (left as they are: a head that
    writes in place writes a copy): each member's, in member order, flat."""
    outs, firsts = [], []
    for k, mb in enumerate(members):
        pos, kw = mb.call(_wire(spec, k, inputs, firsts))
        if mb.alias >= 0 and k == 0:  # a later one writes a member's output: that is the chain's
            pos, kw = _jobs.clone_written(mb.fn, pos, kw)
        with _jobs.bypass():
            r = _jobs.tensors_of(mb.fn(*pos, **kw))
        if len(r) != mb.n_out:
            raise NotTunable(f"chain member {k} ({mb.op}): eager returned {len(r)} tensors")
        outs += r
        firsts.append(r[0])
    return outs


def aliased_outputs(members: list, outs: list) -> list:
    """Per output (run_chain's order): None, or for an in-place member's the first output that is
    the same tensor (the one its self was: deferred mode's relu_ after a batch norm writes the
    norm's)."""
    res = []
    for j, (m, o) in enumerate(zip(output_members(members), outs)):
        inplace = m > 0 and members[m].alias >= 0
        res.append(next((i for i in range(j) if outs[i] is o), None) if inplace else None)
        if inplace and res[-1] is None:
            raise NotTunable(f"chain member {m} ({members[m].op}): writes in place a tensor that "
                             f"is no earlier member's output")
    return res


def output_members(members: list) -> list[int]:
    """The member of each of the job's outputs (run_chain's order)."""
    return [k for k, mb in enumerate(members) for _ in range(mb.n_out)]


def eager_runner(spec: dict, members: list, inputs: list):
    """The chain's members back to back on `inputs` (a head writing in place writes them), with
    no more Python per member than a model's own call: what eager_us times. A member's output is
    let go after the last member that reads it, as a model's temporaries are (held to the run's
    end, GPT-2's GELU on the host timed 1.3x slower than in the model: each output new memory,
    and the heap trimmed and faulted in again), and no argument outlives its call."""
    plan, outs = [], []
    for k, mb in enumerate(members):  # each call's arguments once; tensor slots refilled per run
        pos, kw = mb.call(_wire(spec, k, inputs, outs))
        slots = []  # (argument, list element or None) of each tensor, in order
        for i, v in enumerate(pos):
            if isinstance(v, torch.Tensor):
                slots.append((i, None))
            elif isinstance(v, list):
                slots += [(i, j) for j, t in enumerate(v) if isinstance(t, torch.Tensor)]
        if len(slots) != len(mb.tensors) or any(isinstance(v, (torch.Tensor, list))
                                                for v in kw.values()):
            raise NotTunable(f"chain member {k} ({mb.op}): a tensor passed by keyword")
        refs = spec["members"][k]["inputs"]
        plan.append((mb.fn, pos, kw, list(zip(slots, refs))))
        with _jobs.bypass():
            outs.append(_jobs.tensors_of(mb.fn(*pos, **kw))[0])
    H = spec["n_head_inputs"]
    last = list(range(len(plan)))  # the last member that reads each member's output
    for m, (_, _, _, slots) in enumerate(plan):
        for _, r in slots:
            if r[0] == "member":
                last[r[1]] = m
    # an output no member reads is what the chain gives the model: held to the run's end
    done = [[k for k in range(m) if last[k] == m] for m in range(len(plan))]
    outs.clear()

    def run():
        res = [None] * len(plan)
        for m, (fn, pos, kw, slots) in enumerate(plan):
            for (i, j), r in slots:
                t = inputs[r[1]] if r[0] == "head" else res[r[1]] if r[0] == "member" \
                    else inputs[H + r[1]]
                if j is None:
                    pos[i] = t
                else:
                    pos[i][j] = t
            o = fn(*pos, **kw)
            res[m] = o if isinstance(o, torch.Tensor) else o[0]
            del o
            for (i, j), _ in slots:
                if j is None:
                    pos[i] = None
                else:
                    pos[i][j] = None
            for k in done[m]:
                res[k] = None
    return run


def _desc(t: torch.Tensor) -> dict:
    dt = next(n for n, d in _jobs._TORCH_DTYPES.items() if d == t.dtype)
    return {"dtype": dt, "sizes": list(t.shape), "strides": list(t.stride())}


def _downstream_of(spec: dict, src: int) -> set[int]:
    dep = {src}
    for k, m in enumerate(spec["members"]):
        if any(r[0] == "member" and r[1] in dep for r in m["inputs"]):
            dep.add(k)
    return dep


def output_tolerances(spec: dict, members: list, outs: list) -> list[list[float]]:
    """Per output: the member op's kf_tolerance, widened to a reduction's for the members
    downstream of it (their error is the reduction's, carried on), and to kf_tolerance_flipped
    of the value's dtype for those that read a downstream value stored in bf16 or f16: summed in
    another order, it may round one ulp apart (a Llama RMSNorm's weight mul after its cast back:
    2 ulps; RecurrentGemma's cast of that bf16 value back to float32 carries its ulp)."""
    of = output_members(members)
    first = {m: j for j, m in reversed(list(enumerate(of)))}  # a member's first output
    tol = [list(_jobs.tolerance(members[m].op, o.dtype)) for m, o in zip(of, outs)]
    for r, mb in enumerate(members):
        if mb.op in _REDUCTIONS:
            ra, rr = _jobs.tolerance(mb.op, outs[first[r]].dtype)
            down = _downstream_of(spec, r)
            for j, m in enumerate(of):
                if m in down:
                    tol[j] = [max(tol[j][0], ra), max(tol[j][1], rr)]
                reads = [(ref[1], ref[2]) for ref in spec["members"][m]["inputs"]
                         if ref[0] == "member"]
                low = [outs[first[p] + o].dtype for p, o in reads if p in down and
                       outs[first[p] + o].dtype in (torch.bfloat16, torch.float16)]
                for dt in low + [outs[j].dtype] * bool(low):
                    tol[j][1] = max(tol[j][1], _jobs.tolerance_flipped(dt))
    return tol


def spec_keys(chain: dict) -> list[str]:
    """The signature keys of a chain's spec members: the fusable part of the recorded members,
    from spec_first on."""
    first = chain.get("spec_first", 0)
    return (chain.get("keys") or [])[first:first + len(chain["spec"]["members"])]


def readable(spec: dict) -> str:
    ops = [m["op"].split("::")[-1].split(".")[0] for m in spec["members"]]
    return "chain: " + " -> ".join(ops)


def write_chain_job(job_dir: str, chain: dict, calls: list[list], *, recorded: list[bool],
                    random_inputs: int = 3, search: dict | None = None, seed: int = 0,
                    bench_reps: int = 20) -> dict:
    """Write the job folder of `chain` (a kernel_forge.chains() entry: "spec" and the members'
    signature "keys") from real runs of it: each call is the kernel's inputs, the head's tensor
    inputs then the externals, laid out as the members' signatures say. Returns the job."""
    spec = chain.get("spec")
    if spec is None:
        raise NotTunable(f"chain {chain.get('id', '?')}: not fusable: "
                         f"{chain.get('fusable_reason', 'no spec')}")
    check_spec(spec)
    keys = spec_keys(chain)
    if len(keys) != len(spec["members"]):
        raise NotTunable(f"{readable(spec)}: {len(keys)} signature keys for "
                         f"{len(spec['members'])} members")
    members = [_Member(k, m, key) for k, (m, key) in enumerate(zip(spec["members"], keys))]
    for k, mb in enumerate(members[1:], 1):
        for (name, _), ref in zip(mb.tensors, spec["members"][k]["inputs"]):
            if ref[0] == "member" and _jobs.index_bound(mb.op, name, mb.args) is not None:
                # OPT's position `add -> embedding`: random inputs would index out of range
                raise NotTunable(f"{readable(spec)}: member {k} ({mb.op}) takes its {name} from "
                                 f"member {ref[1]}, which random inputs cannot keep in range")
    if sum(mb.n_out for mb in members) > MAX_MEMBERS:
        raise NotTunable(f"{readable(spec)}: {sum(mb.n_out for mb in members)} outputs; a chain "
                         f"job holds at most {MAX_MEMBERS}")
    H, E = spec["n_head_inputs"], spec["n_ext"]
    first = list(calls[0])
    if len(first) != H + E:
        raise NotTunable(f"{readable(spec)}: a call holds {len(first)} tensors, the chain takes "
                         f"{H} head inputs and {E} externals")
    head = members[0]
    device = first[0].device if first else torch.device("cpu")
    if any(t.device != device for t in first):
        raise NotTunable(f"{readable(spec)}: its tensors are on several devices")
    outs0 = run_chain(spec, members, first)  # checks the wiring against the signatures
    sig = chain_sig_bytes(spec)
    if "sig_hex" in spec and spec["sig_hex"] != sig.hex():
        raise NotTunable(f"{readable(spec)}: the spec's sig_hex is not its canonical bytes")
    names = [n for n, _ in head.tensors] + [f"ext.{e}" for e in range(E)]
    # each kernel input's index bound where a gather reads it: the head's own, or the first
    # member's that takes an external as its indices (FNet's position and token-type embeddings)
    bounds = [_jobs.index_bound(head.op, n, head.args) for n, _ in head.tensors] + [None] * E
    for mb, m in zip(members[1:], spec["members"][1:]):
        for (name, _), ref in zip(mb.tensors, m["inputs"]):
            if ref[0] == "ext" and bounds[H + ref[1]] is None:
                bounds[H + ref[1]] = _jobs.index_bound(mb.op, name, mb.args)
    inputs = []
    for i, t in enumerate(first):
        p = t.data_ptr()
        align = head.tensors[i][1]["align"] if i < H else min(p & -p, 16) if p else 16
        inputs.append(dict(_desc(t), align=int(align), name=names[i]))
    outputs = [dict(_desc(o), alias=head.alias if (k == 0 and head.alias >= 0) else -1)
               for k, o in enumerate(outs0)]
    if head.alias >= 0:  # the head's schema argument index -> its tensor index
        arg_idx = [i for i, a in enumerate(head.args["args"]) if a["kind"] == "tensor"]
        outputs[0]["alias"] = arg_idx.index(head.alias)
    same = aliased_outputs(members, outs0)
    for j, o in enumerate(same):
        if o is not None:
            outputs[j]["alias_output"] = o
    fresh = sum(1 for o, a in zip(outputs, same) if o["alias"] < 0 and a is None)
    if len(inputs) + fresh > _jobs.MAX_KERNEL_TENSORS:
        raise NotTunable(f"{readable(spec)}: {len(inputs)} inputs and {fresh} outputs; a kernel "
                         f"takes at most {_jobs.MAX_KERNEL_TENSORS} tensors")
    scalars = []
    for k, mb in enumerate(members):
        for a in mb.args["args"]:
            if a["kind"] in ("tensor", "tensor_list"):
                continue
            scalars.append(_jobs.job_scalar(f"m{k}.{a['name']}", a))

    per_case = sum(t.numel() * t.element_size() for t in first + list(outs0))
    _jobs.check_disk(job_dir, (len(calls) + random_inputs) * per_case, readable(spec))
    os.makedirs(os.path.join(job_dir, "cases"), exist_ok=True)
    gen = torch.Generator(device=device).manual_seed(seed)
    cases, case_bytes = [], 0

    def write_files(c: int, what: str, tensors: list) -> list[str]:
        nonlocal case_bytes
        files = []
        for j, t in enumerate(tensors):
            files.append(f"c{c}_{what}{j}.bin")
            with open(os.path.join(job_dir, "cases", files[-1]), "wb") as f:
                case_bytes += _jobs.write_span(f, t)
        return files

    def add_case(kind: str, ins: list):
        outs = run_chain(spec, members, ins)
        for k, o, d in zip(output_members(members), outs, outputs):
            if not _same_layout(d, o):
                raise NotTunable(f"chain member {k} ({members[k].op}): eager's output is laid out "
                                 f"unlike the first call's")
        cases.append({"kind": kind, "inputs": write_files(len(cases), "in", ins),
                      "outputs": write_files(len(cases), "out", outs)})

    for ins, rec in zip(calls, recorded):
        add_case("recorded" if rec else "example", list(ins))
    for v in range(random_inputs):
        # a gather's indices drawn in range (any other value is eager's error, not a case)
        add_case("random", [_jobs.random_like(t, v, head.op, n, gen, index_bound=bounds[i])
                            for i, (t, n) in enumerate(zip(first, names))])

    work = [_jobs.clone_exact(t) for t in first]
    with _jobs.bypass():
        eager_us = _jobs.bench_us(eager_runner(spec, members, work), device, reps=bench_reps)
        floor_us = min(_jobs.call_floor_us(device, bench_reps), eager_us)
    moved = 0
    for t in first:
        moved += min(_jobs.span_numel(t), t.numel()) * t.element_size()
    for o, a in zip(outs0, same):
        moved += o.numel() * o.element_size() if a is None else 0
    with _jobs.bypass():
        bw = _jobs.copy_bandwidth_gbs(device, moved)
    tol = output_tolerances(spec, members, outs0)
    for root in set(same) - {None}:  # one tensor: each of its writers the widest tolerance
        group = [root] + [j for j, o in enumerate(same) if o == root]
        wide = [max(tol[j][0] for j in group), max(tol[j][1] for j in group)]
        for j in group:
            tol[j] = list(wide)
    search = dict(search or {})
    if not search.get("candidate_timeout_s"):
        search["candidate_timeout_s"] = round(10 + 10 * case_bytes / 1e9, 1)
    # every member's outputs, flat, each marked with its member (plugin/chainserve.c reads it)
    layout = [dict(o, member=m) for m, mb in enumerate(members) for o in mb.info["outputs"]]
    job = {
        "format": 1, "op": CHAIN_OP, "signature": readable(spec), "sig_hex": sig.hex(),
        "torch_version": head.info["torch_version"], "outputs_layout": layout,
        "backend": "nvrtc" if device.type == "cuda" else "host",
        "device_index": head.info["device_index"], "inputs": inputs, "outputs": outputs,
        "scalars": scalars, "chain": spec, "cases": cases, "eager_us": eager_us,
        "call_floor_us": floor_us, "bytes_moved": moved, "bandwidth_gbs": bw,
        "atol": max(a for a, _ in tol), "rtol": max(r for _, r in tol), "output_tol": tol,
        "search": search, "keys": keys,
    }
    with open(os.path.join(job_dir, "job.json"), "w") as f:
        json.dump(job, f, indent=1)
    return job
