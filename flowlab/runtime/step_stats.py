"""Step statistics: executor events turned into `RunMetadata.step_stats`.

`StepStatsCollector` is an executor listener.  During a step it only appends each
event to a list (op_end events also get a small description of their outputs --
shape, dtype, bytes -- so that no array is kept alive past its last consumer); all
pairing and naming happens afterwards, in `step_stats()`, off the step's clock.

What a `NodeExecStats` holds (TensorFlow's field names): `all_start_micros` is the
op's start on the process's monotonic clock (`time.perf_counter_ns`, in µs; TensorFlow
uses the epoch, but one monotonic clock per process is what lets two steps or two
devices be lined up), `op_end_rel_micros == all_end_rel_micros` is its duration (for an
asynchronous kernel -- Recv, Dequeue -- from its start until its value was available),
the `*_nanos` fields are the same at ns resolution, `thread_id` is the executor thread,
`output[i]` describes the produced tensors (dead outputs are left out).  flowlab adds
`op_type`, `inputs`, `dead` (an op skipped because an input was dead), `error`,
`frame`/`iteration`, `task`, `step_id`, and `attrs` for `_Send`/`_Recv` (rendezvous key
and devices) -- what `flowlab.profiler.Trace` needs to pair transfers and find the
critical path.

Ops are found by name through a resolver (the plan's nodes first, then the graph), as
events carry only the op's name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.kernels.registry import DEAD
from flowlab.runtime.config import (
    AllocationDescription,
    DeviceStepStats,
    NodeExecStats,
    NodeOutput,
    RunMetadata,
    StepStats,
    TensorDescription,
    TensorShapeDim,
    TensorShapeProto,
)

__all__ = ["StepStatsCollector", "TRANSFER_OP_TYPES", "session_resolver", "task_of"]

# Op types whose rendezvous attrs a trace needs to pair sends with receives.
TRANSFER_OP_TYPES = frozenset({"_Send", "_Recv", "_HostSend", "_HostRecv"})
_TRANSFER_ATTRS = ("tensor_name", "send_device", "recv_device", "send_device_incarnation",
                   "client_terminated")

Resolver = Callable[[str], Any]


def task_of(device: str) -> str:
    """The task part of a full device name: '/job:w/replica:0/task:1' of
    '/job:w/replica:0/task:1/device:CPU:0'."""
    i = device.find("/device:")
    return device[:i] if i >= 0 else ""


def _describe(outs: Any) -> tuple[Any, ...]:
    """(shape, numpy dtype or None, nbytes, is_ref) per output; None for a dead one."""
    res = []
    for o in outs:
        if o is DEAD:
            res.append(None)
            continue
        ref = False
        if not hasattr(o, "dtype") and hasattr(o, "value") and hasattr(o, "read"):
            o = o.value  # a variable's storage (a Ref output): not a new allocation
            ref = True
        if isinstance(o, (bytes, str)):
            res.append(((), np.dtype(object), len(o), ref))
            continue
        dt = getattr(o, "dtype", None)
        res.append((tuple(getattr(o, "shape", ())), dt, 0 if ref else int(getattr(o, "nbytes", 0)), ref))
    return tuple(res)


class StepStatsCollector:
    """Listener that records a step's events; `fill(md)` writes `md.step_stats`.

    Args:
      resolve: name -> Operation (or None) for op names seen in events; used after
        the step to fill `inputs`, `timeline_label` and the `_Send`/`_Recv` attrs.
    """

    def __init__(self, resolve: Resolver | None = None) -> None:
        self.events: list[tuple[Any, Any]] = []
        self.resolve = resolve
        # Bound once: the listener is called per event on the step's hot path.
        append = self.events.append

        def listen(ev: Any) -> None:
            append((ev, _describe(ev.info) if ev.kind == "op_end" else None))

        self.listen = listen

    def __call__(self, ev: Any) -> None:
        self.listen(ev)

    def clear(self) -> None:
        del self.events[:]

    def step_ids(self) -> list[int]:
        """The ids of the steps seen, in order of first event."""
        return list(dict.fromkeys(ev.step_id for ev, _ in self.events))

    def step_stats(self, step_ids: Iterable[int] | None = None) -> StepStats:
        """The events of `step_ids` (default: all) as a StepStats, one DeviceStepStats
        per device, nodes in start order."""
        wanted = None if step_ids is None else set(step_ids)
        ops = _OpCache(self.resolve)
        starts: dict[tuple[Any, ...], Any] = {}
        by_device: dict[str, list[NodeExecStats]] = {}
        threads: dict[str, set[int]] = {}
        last_us = 0.0
        for ev, desc in list(self.events):
            if wanted is not None and ev.step_id not in wanted:
                continue
            last_us = max(last_us, ev.time_us)
            key = (ev.step_id, ev.node, getattr(ev, "frame", None), getattr(ev, "iteration", None))
            kind = ev.kind
            if kind == "op_start":
                starts[key] = ev
                continue
            if kind not in ("op_end", "op_dead", "error"):
                continue  # other event kinds (frames, ...) are not node executions
            st = starts.pop(key, ev)
            ns = _node_stats(st, ev, desc, ops)
            if kind == "op_dead":
                ns.dead = True
            elif kind == "error":
                ns.error = str(getattr(ev.info, "message", ev.info))
            by_device.setdefault(ev.device, []).append(ns)
            threads.setdefault(ev.device, set()).add(ev.thread)
        for st in starts.values():  # started, never finished: cancelled with the step
            ns = _node_stats(st, st, None, ops, end_us=last_us)
            ns.error = "did not finish (the step was cancelled)"
            by_device.setdefault(st.device, []).append(ns)
            threads.setdefault(st.device, set()).add(st.thread)
        names = {t.ident: t.name for t in threading.enumerate()}
        out = StepStats()
        for dev, stats in by_device.items():
            stats.sort(key=lambda n: n.all_start_nanos)
            out.dev_stats.append(DeviceStepStats(
                device=dev, node_stats=stats,
                thread_names={t: names.get(t, f"thread {t}") for t in sorted(threads[dev])},
            ))
        return out

    def fill(self, md: RunMetadata) -> None:
        """Write the recorded steps into `md.step_stats`."""
        md.step_stats = self.step_stats()


class _OpCache:
    def __init__(self, resolve: Resolver | None) -> None:
        self.resolve = resolve
        self.ops: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self.ops:
            try:
                self.ops[name] = self.resolve(name) if self.resolve is not None else None
            except (KeyError, ValueError):
                self.ops[name] = None
        return self.ops[name]


def _node_stats(st: Any, ev: Any, desc: Any, ops: _OpCache, end_us: float | None = None) -> NodeExecStats:
    start_ns = int(st.time_us * 1000)
    dur_ns = max(0, int(((ev.time_us if end_us is None else end_us) - st.time_us) * 1000))
    op = ops.get(ev.node)
    inputs: list[str] = []
    attrs: dict[str, Any] = {}
    if op is not None:
        inputs = [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
        if ev.op_type in TRANSFER_OP_TYPES:
            attrs = {k: op.get_attr(k) for k in _TRANSFER_ATTRS if k in op._attrs}
    label_inputs = ", ".join(n[:-2] if n.endswith(":0") else n for n in inputs)
    frame = getattr(ev, "frame", None)
    it = getattr(ev, "iteration", None)
    ns = NodeExecStats(
        node_name=ev.node, op_type=ev.op_type,
        all_start_micros=start_ns // 1000, op_start_rel_micros=0,
        op_end_rel_micros=dur_ns // 1000, all_end_rel_micros=dur_ns // 1000,
        scheduled_micros=start_ns // 1000,
        all_start_nanos=start_ns, op_start_rel_nanos=0,
        op_end_rel_nanos=dur_ns, all_end_rel_nanos=dur_ns,
        timeline_label=f"{ev.node} = {ev.op_type}({label_inputs})",
        thread_id=st.thread, inputs=inputs, attrs=attrs,
        frame="" if frame is None else str(getattr(frame, "name", frame)),
        iteration=0 if it is None else int(it),
        task=task_of(ev.device), step_id=ev.step_id,
    )
    if desc:
        allocator = "gpu" if "GPU" in ev.device.rsplit("/", 1)[-1] else "cpu"
        for slot, d in enumerate(desc):
            if d is None:
                continue
            shape, dt, nbytes, _ = d
            try:
                fl_dt = dtypes.as_dtype(dt) if dt is not None else None
            except (TypeError, ValueError):
                fl_dt = None
            ns.output.append(NodeOutput(slot=slot, tensor_description=TensorDescription(
                dtype=fl_dt,
                shape=TensorShapeProto(dim=[TensorShapeDim(size=int(s)) for s in shape]),
                allocation_description=AllocationDescription(
                    requested_bytes=nbytes, allocated_bytes=nbytes, allocator_name=allocator),
            )))
    return ns


def session_resolver(session: Any, plan: Any = None) -> Resolver:
    """Find ops by name: in `plan`'s nodes (ops a runtime pass added, as `_Send`), then
    in the session's graph, then in the nodes of the session's cached plans."""
    table: dict[str, Any] = {}

    def add_plan(p: Any) -> None:
        for n in getattr(p, "nodes", ()) or ():
            table.setdefault(n.op.name, n.op)
        for sub in getattr(p, "partitions", ()) or ():
            add_plan(getattr(sub, "plan", sub))

    if plan is not None:
        add_plan(plan)
    searched_cache = [False]

    def resolve(name: str) -> Any:
        op = table.get(name)
        if op is not None:
            return op
        g = session.graph
        op = g._by_name.get(name) if hasattr(g, "_by_name") else None
        if op is None and not searched_cache[0]:
            searched_cache[0] = True
            for p in list(getattr(session, "_plans", {}).values()):
                add_plan(p)
            op = table.get(name)
        return op

    return resolve
