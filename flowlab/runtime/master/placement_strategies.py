"""The two placement strategies (see flowlab.runtime.master.placement): TensorFlow's first
feasible device with its placer heuristics, and the white paper's greedy simulation
over a cost model.  Both choose one device per colocation group through `assign(root,
device, reason, by)`; groups chosen before the call (`chosen`) are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from flowlab.graph.tensor import Operation, Tensor
from flowlab.runtime.master.cost_model import CostModel
from flowlab.runtime.task.device import Device


def short_name(device: Device) -> str:
    """`/cpu:1` for /job:localhost/replica:0/task:0/device:CPU:1 (reasons stay short)."""
    return f"/{device.device_type.lower()}:{device.index}"


# --- TensorFlow's choice -------------------------------------------------------------
_METADATA_OPS = frozenset({"Shape", "ShapeN", "Rank", "Size"})


def first_choice(
    groups: dict[str, list[Operation]],
    group_of: dict[str, str],
    candidates: dict[str, list[Device]],
    base_reason: dict[str, str],
    anchor: dict[str, str],
    assign: Callable[[str, Device, str, str], None],
    chosen: dict[str, Device],
    inputs_of: Callable[[Operation], list[Tensor]],
) -> None:
    """The first candidate, with TensorFlow's placer heuristics for ops free to move:
    (A) a generator (no inputs, one non-reference output) goes with its consumers when
    they all sit on one device it may use; (B) a metadata op (Shape, Size, Rank) goes
    with its input.  The consumers are those of the ops placed (the whole graph, as
    TensorFlow's, when a session places it)."""
    generators: list[str] = []
    for root, cands in candidates.items():
        if root in chosen:  # kept from an earlier placement
            continue
        members = groups[root]
        op = members[0]
        if len(members) == 1 and len(cands) > 1:
            if not op._inputs and len(op._outputs) == 1 and not op._outputs[0].dtype.is_ref_dtype:
                generators.append(root)
                continue
            if op.type in _METADATA_OPS:
                ins = inputs_of(op)
                src = chosen.get(group_of.get(ins[0].op.name, "")) if ins else None
                if src is not None and src in cands:
                    assign(root, src, f"metadata: placed with its input {ins[0].op.name}", op.name)
                    continue
        assign(root, cands[0], base_reason[root], anchor[root])
    if not generators:
        return
    consumers: dict[str, list[str]] = {}
    for members in groups.values():
        for op in members:
            for t in inputs_of(op):
                consumers.setdefault(t.op.name, []).append(op.name)
    for root in generators:
        users = consumers.get(root, [])
        where = {chosen[group_of[u]].name: chosen[group_of[u]] for u in users if group_of.get(u) in chosen}
        cands = candidates[root]
        if users and len(where) == 1:
            dev = next(iter(where.values()))
            if dev in cands:
                assign(root, dev, f"generator: placed with its consumer {users[0]}", root)
                continue
        assign(root, cands[0], base_reason[root], anchor[root])


# --- the greedy simulation -----------------------------------------------------------
def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def greedy_choice(
    ops: list[Operation],
    groups: dict[str, list[Operation]],
    group_of: dict[str, str],
    candidates: dict[str, list[Device]],
    base_reason: dict[str, str],
    anchor: dict[str, str],
    assign: Callable[[str, Device, str, str], None],
    chosen: dict[str, Device],
    cm: CostModel,
    inputs_of: Callable[[Operation], list[Tensor]],
) -> tuple[float, dict[str, dict[str, float]]]:
    busy: dict[str, float] = {}
    finish: dict[str, float] = {}
    estimates: dict[str, dict[str, float]] = {}
    # Generators (no inputs at all, alone in their group, several candidates) wait for
    # their first consumer and go with it.
    deferred: set[str] = {
        op.name for op in ops
        if not op._inputs and not op._control_inputs and len(groups[group_of[op.name]]) == 1
        and len(candidates[group_of[op.name]]) > 1
    }
    by_name = {op.name: op for op in ops}
    # Per-call memos: the walk asks for the same sizes and times once per candidate.
    nbytes: dict[tuple[int, int], int] = {}
    times: dict[tuple[int, str, float], float] = {}

    def tensor_bytes(t: Tensor) -> int:
        k = (id(t.op), t.value_index)
        b = nbytes.get(k)
        if b is None:
            b = nbytes[k] = cm.tensor_bytes(t)
        return b

    def compute(op: Operation, dev: Device) -> float:
        k = (id(op), dev.device_type, cm.device_speed.get(dev.name, 1.0))
        c = times.get(k)
        if c is None:
            c = times[k] = cm.compute_time(op, dev)
        return c

    def free_at(dev: Device) -> float:
        # A device nothing runs on yet costs a partition's start-up.
        if dev.name in busy:
            return busy[dev.name]
        return 0.0 if not busy else cm.device_startup

    def arrival(op: Operation, dev: Device) -> float:
        ready = 0.0
        for t in inputs_of(op):
            p = t.op.name
            if p in deferred or p not in finish:
                continue  # follows this op, or fed
            ready = max(ready, finish[p] + cm.transfer_time(tensor_bytes(t), chosen[group_of[p]], dev))
        for c in op._control_inputs:
            if c.name in finish and c.name not in deferred:
                ready = max(ready, finish[c.name] + cm.transfer_time(0, chosen[group_of[c.name]], dev))
        return ready

    def run_on(op: Operation, dev: Device) -> None:
        start = max(arrival(op, dev), free_at(dev))
        finish[op.name] = start + compute(op, dev)
        busy[dev.name] = finish[op.name]

    for op in ops:
        if op.name in deferred:
            continue
        root = group_of[op.name]
        cands = candidates[root]
        if root not in chosen:
            if len(cands) == 1:
                assign(root, cands[0], base_reason[root], anchor[root])
            else:
                est = {
                    d.name: max(arrival(op, d), free_at(d)) + compute(op, d)
                    for d in cands
                }
                estimates[op.name] = est
                best = min(cands, key=lambda d: est[d.name])  # min keeps device order on ties
                others = [d for d in cands if d is not best]
                runner = min(others, key=lambda d: est[d.name])
                tie = " (a tie: first in device order)" if est[runner.name] <= est[best.name] else ""
                assign(
                    root, best,
                    f"fastest: est. {_fmt(est[best.name])} vs {_fmt(est[runner.name])} on "
                    f"{short_name(runner)}{tie}",
                    op.name,
                )
        dev = chosen[root]
        for t in inputs_of(op):
            p = t.op.name
            if p in deferred and group_of[p] not in chosen:
                proot = group_of[p]
                target = dev if dev in candidates[proot] else candidates[proot][0]
                assign(proot, target, f"generator: placed with its consumer {op.name}", p)
                finish[p] = compute(by_name[p], target)
                deferred.discard(p)
        run_on(op, dev)
    for name in deferred:  # never consumed in this step (fetched directly)
        root = group_of[name]
        if root not in chosen:
            assign(root, candidates[root][0], base_reason[root], name)
    return (max(finish.values()) if finish else 0.0), estimates


