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

Events carry the Operation itself (`ExecEvent.op`); the resolver (the plan's nodes
first, then the graph) is only asked for events that come without it.
"""

from __future__ import annotations

import itertools
import operator
import threading
from array import array
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.kernels.registry import DEAD
from flowlab.kernels.resources import VariableState
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
from flowlab.runtime.task.events import LoopRecords

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


_ARRAYS = (np.ndarray, np.generic)
# Types described by their own shape, dtype and nbytes (what most outputs are).
_PLAIN = frozenset({np.ndarray, np.float32, np.float64, np.float16, np.int32, np.int64,
                    np.int8, np.int16, np.uint8, np.bool_, np.complex64, np.complex128})


def _pack(outs: Any) -> tuple[Any, ...]:
    """The descriptions of `outs` (see `_describe`) in a few flat objects the garbage
    collector does not track: a profile keeps every step's, and a tuple per output
    made each full collection slower as the profile grew (`_unpack` reverses it).
    Kinds: 0 an array, 1 a variable (its value's shape, 0 new bytes), 2 dead, 3 other
    (described as `_describe` does, in `odd`)."""
    plain = _PLAIN
    kinds = bytes([
        0 if type(o) in plain else
        1 if type(o) is VariableState and type(o.value) in plain else
        2 if o is DEAD else 3
        for o in outs
    ])
    odd = None
    vals = outs
    if any(kinds):
        vals = [o if k == 0 else o.value if k == 1 else _BLANK for o, k in zip(outs, kinds)]
        if 3 in kinds:
            odd = {j: _describe((o,))[0] for j, (o, k) in enumerate(zip(outs, kinds)) if k == 3}
    shapes = [v.shape for v in vals]
    return (array("q", itertools.chain.from_iterable(shapes)), bytes(map(len, shapes)), kinds,
            "".join([v.dtype.char for v in vals]),
            array("q", [v.nbytes if k == 0 else 0 for v, k in zip(vals, kinds)]), odd)


_BLANK = np.empty((), object)  # stands for a dead or other output in `_pack`'s fields


_DTYPE_OF_CHAR: dict[str, Any] = {}


def _unpack(packed: tuple[Any, ...]) -> list[Any]:
    """The per-output descriptions `_pack` packed."""
    dims, ndims, kinds, chars, nbytes, odd = packed
    out: list[Any] = []
    p = 0
    for j, kind in enumerate(kinds):
        if kind == 2:
            out.append(None)
        elif kind == 3:
            out.append(odd[j])
        else:
            n = ndims[j]
            dt = _DTYPE_OF_CHAR.get(chars[j])
            if dt is None:
                dt = _DTYPE_OF_CHAR[chars[j]] = np.dtype(chars[j])
            out.append((tuple(dims[p:p + n]), dt, nbytes[j], kind == 1))
            p += n
    return out


def _describe(outs: Any) -> tuple[Any, ...]:
    """(shape, numpy dtype or None, nbytes, is_ref) per output; None for a dead one."""
    res: list[Any] = []
    for o in outs:
        if isinstance(o, _ARRAYS):  # the common case first: it runs once per op
            res.append((o.shape, o.dtype, o.nbytes, False))
            continue
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
        self.events: list[tuple[Any, ...]] = []
        self.resolve = resolve
        # Bound once: the listener is called per event on the step's hot path.
        append = self.events.append

        def listen(ev: Any) -> None:
            # A flat tuple, not the event: an op_end event holds the output arrays.
            kind = ev.kind
            append((
                kind, ev.step_id, ev.node, ev.op_type, ev.device, ev.time_us, ev.thread,
                ev.frame, ev.iteration,
                _describe(ev.info) if kind == "op_end" else
                _error_text(ev.info) if kind == "error" else None,
                ev.op,
            ))

        def take_records(rec: Any) -> None:
            if type(rec) is LoopRecords:
                # A fused loop's iterations: described by column now, expanded when read.
                append(("loop", rec.step_id, rec.thread, rec.layout, rec.first, _loop_columns(rec),
                        rec.final, rec.end_ns, None if rec.exits is None else _describe(rec.exits),
                        None))
                return
            # A whole straight-line step (events.StepRecords): only its outputs are
            # described now (so that none is kept), packed; events are made when read.
            append(("records", rec.step_id, rec.nodes, rec.thread, array("q", rec.times_ns),
                    rec.out_start, rec.ran, rec.error, rec.error_ns, _pack(rec.outputs)))

        listen.take_records = take_records  # type: ignore[attr-defined]
        self.listen = listen

    def __call__(self, ev: Any) -> None:
        self.listen(ev)

    def clear(self) -> None:
        del self.events[:]

    def step_ids(self) -> list[int]:
        """The ids of the steps seen, in order of first event."""
        return list(dict.fromkeys(e[1] for e in self.events))

    def step_stats(self, step_ids: Iterable[int] | None = None) -> StepStats:
        """The events of `step_ids` (default: all) as a StepStats, one DeviceStepStats
        per device, nodes in start order."""
        wanted = None if step_ids is None else set(step_ids)
        ops = _OpCache(self.resolve)
        starts: dict[tuple[Any, ...], Any] = {}
        by_device: dict[str, list[NodeExecStats]] = {}
        threads: dict[str, set[int]] = {}
        last_us = 0.0
        for e in _expand(list(self.events)):
            if wanted is not None and e[1] not in wanted:
                continue
            kind, step_id, node, _, device, time_us, thread, frame, it, info, _ = e
            last_us = max(last_us, time_us)
            key = (step_id, node, frame, it)
            if kind == "op_start":
                starts[key] = e
                continue
            if kind not in ("op_end", "op_dead", "error"):
                continue  # other event kinds (frames, ...) are not node executions
            ns = _node_stats(starts.pop(key, e), e, info if kind == "op_end" else None, ops)
            if kind == "op_dead":
                ns.dead = True
            elif kind == "error":
                ns.error = info
            by_device.setdefault(device, []).append(ns)
            threads.setdefault(device, set()).add(thread)
        for st in starts.values():  # started, never finished: cancelled with the step
            ns = _node_stats(st, st, None, ops, end_us=last_us)
            ns.error = "did not finish (the step was cancelled)"
            by_device.setdefault(st[4], []).append(ns)
            threads.setdefault(st[4], set()).add(st[6])
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
        """Give `md.step_stats` the recorded steps.  They are converted when first
        read, not on the step's clock (the events are already small tuples)."""
        md.step_stats = _LazyStepStats(self.step_stats)


def _expand(events: list[tuple[Any, ...]]) -> Iterable[tuple[Any, ...]]:
    """The recorded events, a straight-line step's records turned into the events the
    dataflow executor would have published (op_start and op_end per op, then op_start
    and error for the op that failed)."""
    for e in events:
        if e[0] == "loop":
            yield from _expand_loop(e)
            continue
        if e[0] != "records":
            yield e
            continue
        _, step_id, nodes, thread, times, start, ran, error, error_ns, packed = e
        descs = _unpack(packed)
        for k in range(ran + (error is not None)):
            node = nodes[k]
            op = node.op
            name, op_type, device = op.name, op.type, node.ctx.device.name
            yield ("op_start", step_id, name, op_type, device, times[k] / 1000.0, thread, "", 0, None, op)
            if k < ran:
                yield ("op_end", step_id, name, op_type, device, times[k + 1] / 1000.0, thread,
                       "", 0, tuple(descs[start[k]:start[k + 1]]), op)
            else:
                yield ("error", step_id, name, op_type, device, error_ns / 1000.0, thread,
                       "", 0, _error_text(error), op)


_SCALARS = frozenset(t for t in _PLAIN if t is not np.ndarray)
_shape_of = operator.attrgetter("shape")
_dtype_of = operator.attrgetter("dtype")


def _column(values: tuple[Any, ...]) -> Any:
    """The descriptions of one output over a batch of iterations: one description
    when they all have one (the common case, found at C speed: a type, a shape, a
    dtype each), else a list of them."""
    types = set(map(type, values))
    if len(types) == 1:
        t = types.pop()
        if t in _SCALARS:
            v = values[0]
            return ((), v.dtype, v.nbytes, False)
        if t is np.ndarray:
            shapes = set(map(_shape_of, values))
            dts = set(map(_dtype_of, values))
            if len(shapes) == 1 and len(dts) == 1:
                v = values[0]
                return (v.shape, v.dtype, v.nbytes, False)
    return [_describe((v,))[0] for v in values]


class _Column(list):  # type: ignore[type-arg]
    """A column of per-iteration descriptions (a plain tuple is one for all)."""


def _loop_columns(rec: Any) -> tuple[Any, ...]:
    """A batch of loop rows (`loop_fusion.LoopLayout`) described: (times, one column
    per clock read; descriptions, one per value, each for the whole batch or a
    `_Column`; flags, one column per flag; the last iteration's (times, descriptions)
    or None; a failed iteration's (cols run, times, descriptions, flags) or None; the
    constants' descriptions)."""
    lay = rec.layout
    rows = rec.rows
    last = None
    if rec.final and rec.partial is None and rows:
        rows, last = rows[:-1], rows[-1]
    nt, nv = lay.ntimes_full, lay.nvals_full
    times: list[Any] = []
    descs: list[Any] = []
    flags: list[Any] = []
    if rows:
        cols = list(zip(*rows))
        times = cols[:nt]  # tuples of ints as they come (an array's conversion cost more)
        for c, known in zip(cols[nt:nt + nv], lay.static):
            d = known if known is not None else _column(c)  # the graph fixes many: no look
            descs.append(_Column(d) if type(d) is list else d)
        flags = cols[nt + nv:]
    last_part = None
    if last is not None:
        last_part = (last[:lay.ntimes_last], _describe(last[lay.ntimes_last:]))
    partial = None
    if rec.partial is not None:
        ran, row = rec.partial
        partial = (ran, row[:nt], _describe(row[nt:nt + nv]), row[nt + nv:])
    return times, descs, flags, last_part, partial, _describe(lay.consts)


def _expand_loop(e: tuple[Any, ...]) -> Iterable[tuple[Any, ...]]:
    """A fused loop's recorded batch as the frame path's events: per iteration each op's
    op_start and op_end (op_dead for a dead one), the Exits dead in an iteration that
    continues; at the end the last iteration's ops, the body's dead ones, and the Exits."""
    _, step_id, thread, lay, first, described, final, end_ns, exits, _ = e
    times, descs, flags, last, partial, consts = described
    frame = lay.frame
    full = lay.full
    nt, nv = lay.ntimes_full, lay.nvals_full
    nrows = len(times[0]) if times else 0

    def ops_of(cols: Any, it: int, t: Any, d: Any, dead: Any) -> Iterable[tuple[Any, ...]]:
        for node, t0, t1, outs, flag, switch in cols:
            op = node.op
            name, op_type, device = op.name, op.type, node.ctx.device.name
            start = t(t0) / 1000.0
            if flag >= 0 and dead(flag):
                yield ("op_dead", step_id, name, op_type, device, start, thread, frame, it, None, op)
                continue
            out = tuple(consts[-1 - j] if j < 0 else d(j) for j in outs)
            if switch == 1:
                out = (None,) + out
            elif switch == 2:
                out = out + (None,)
            yield ("op_start", step_id, name, op_type, device, start, thread, frame, it, None, op)
            yield ("op_end", step_id, name, op_type, device, t(t1) / 1000.0, thread, frame, it, out, op)

    def dead_ops(entries: Any, it: int, at_us: float) -> Iterable[tuple[Any, ...]]:
        for x in entries:
            op = x.node.op
            yield ("op_dead", step_id, op.name, op.type, x.node.ctx.device.name, at_us, thread, frame, it, None, op)

    for r in range(nrows):
        def d(j: int, r: int = r) -> Any:
            col = descs[j - nt]
            return col[r] if type(col) is _Column else col

        yield from ops_of(full, first + r, lambda k, r=r: times[k][r], d,
                          lambda f, r=r: flags[f - nt - nv][r])
        yield from dead_ops(lay.exits, first + r, times[nt - 1][r] / 1000.0)
    it = first + nrows
    if last is not None:
        lt, ld = last
        yield from ops_of(lay.last, it, lt.__getitem__, lambda j: ld[j - lay.ntimes_last], bool)
        yield from dead_ops(lay.dead_at_end, it, lt[-1] / 1000.0)
    if partial is not None:
        ran, pt, pd, pf = partial
        yield from ops_of(full[:ran], it, pt.__getitem__, lambda j: pd[j - nt], lambda f: pf[f - nt - nv])
    if final and exits is not None:
        for x, desc in zip(lay.exits, exits):
            op = x.node.op
            args = (step_id, op.name, op.type, x.node.ctx.device.name, end_ns / 1000.0, thread, frame, it)
            yield ("op_start", *args, None, op)
            yield ("op_end", *args, (desc,), op)


class _LazyStepStats(StepStats):
    """A StepStats whose `dev_stats` is built on first access."""

    def __init__(self, build: Callable[[], StepStats]) -> None:  # noqa: D107 - no fields yet
        object.__setattr__(self, "_build", build)

    def __getattr__(self, name: str) -> Any:
        if name != "dev_stats":
            raise AttributeError(name)
        dev_stats = self._build().dev_stats
        object.__setattr__(self, "dev_stats", dev_stats)
        return dev_stats


class _OpCache:
    """Per node name: (inputs, the label's input list, Send/Recv attrs), found once."""

    def __init__(self, resolve: Resolver | None) -> None:
        self.resolve = resolve
        self.nodes: dict[str, tuple[list[str], str, dict[str, Any]]] = {}
        self.dtypes: dict[Any, Any] = {}

    def get(self, name: str, op_type: str, op: Any = None) -> tuple[list[str], str, dict[str, Any]]:
        found = self.nodes.get(name)
        if found is None:
            if op is None and self.resolve is not None:
                try:
                    op = self.resolve(name)
                except (KeyError, ValueError):
                    op = None
            inputs: list[str] = []
            attrs: dict[str, Any] = {}
            if op is not None:
                inputs = [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
                if op_type in TRANSFER_OP_TYPES:
                    attrs = {k: op.get_attr(k) for k in _TRANSFER_ATTRS if k in op._attrs}
            label = ", ".join(n[:-2] if n.endswith(":0") else n for n in inputs)
            found = self.nodes[name] = (inputs, label, attrs)
        return found

    def dtype(self, dt: Any) -> Any:
        if dt not in self.dtypes:
            try:
                self.dtypes[dt] = dtypes.as_dtype(dt) if dt is not None else None
            except (TypeError, ValueError):
                self.dtypes[dt] = None
        return self.dtypes[dt]


def _make(cls: type, **kw: Any) -> Any:
    """`cls(**kw)` for the message classes above, without their per-field checks (a
    traced step builds thousands; the names here are fixed and known to be fields)."""
    obj = cls.__new__(cls)  # type: ignore[call-overload]
    d = obj.__dict__
    for k, v in cls._fields.items():  # type: ignore[attr-defined]
        if k not in kw:
            d[k] = v() if callable(v) else v
    d.update(kw)
    return obj


def _error_text(err: Any) -> str:
    return str(getattr(err, "message", err))


def _node_stats(st: tuple[Any, ...], ev: tuple[Any, ...], desc: Any, ops: _OpCache,
                end_us: float | None = None) -> NodeExecStats:
    _, step_id, node, op_type, device, time_us, _, frame, it, _, op = ev
    start_ns = int(st[5] * 1000)
    dur_ns = max(0, int(((time_us if end_us is None else end_us) - st[5]) * 1000))
    inputs, label_inputs, attrs = ops.get(node, op_type, op if op is not None else st[10])
    ns = _make(
        NodeExecStats, node_name=node, op_type=op_type,
        all_start_micros=start_ns // 1000, op_start_rel_micros=0,
        op_end_rel_micros=dur_ns // 1000, all_end_rel_micros=dur_ns // 1000,
        scheduled_micros=start_ns // 1000,
        all_start_nanos=start_ns, op_start_rel_nanos=0,
        op_end_rel_nanos=dur_ns, all_end_rel_nanos=dur_ns,
        timeline_label=f"{node} = {op_type}({label_inputs})",
        thread_id=st[6], inputs=list(inputs), attrs=dict(attrs),
        frame="" if frame is None else str(getattr(frame, "name", frame)),
        iteration=0 if it is None else int(it),
        task=task_of(device), step_id=step_id,
    )
    if desc:
        allocator = "gpu" if "GPU" in device.rsplit("/", 1)[-1] else "cpu"
        for slot, d in enumerate(desc):
            if d is None:
                continue
            shape, dt, nbytes, _ = d
            fl_dt = ops.dtype(dt)
            ns.output.append(_make(NodeOutput, slot=slot, tensor_description=_make(
                TensorDescription, dtype=fl_dt,
                shape=_make(TensorShapeProto, dim=[_make(TensorShapeDim, size=int(s)) for s in shape]),
                allocation_description=_make(
                    AllocationDescription,
                    requested_bytes=nbytes, allocated_bytes=nbytes, allocator_name=allocator),
            )))
    return ns


def session_resolver(session: Any, plan: Any = None) -> Resolver:
    """Find ops by name: in `plan`'s nodes (ops a runtime pass added, as `_Send`), then
    in the session's graph, then in the nodes of the session's cached plans.  Nothing
    is looked at until the first call (after the step)."""
    table: dict[str, Any] = {}
    state = {"plan": plan, "searched_cache": False}

    def add_plan(p: Any) -> None:
        _add_plan(table, p)

    def resolve(name: str) -> Any:
        if state["plan"] is not None:
            add_plan(state["plan"])
            state["plan"] = None
        op = table.get(name)
        if op is not None:
            return op
        g = session.graph
        op = g._by_name.get(name) if hasattr(g, "_by_name") else None
        if op is None and not state["searched_cache"]:
            state["searched_cache"] = True
            for p in list(getattr(session, "_plans", {}).values()):
                add_plan(p)
            op = table.get(name)
        return op

    return resolve


def _add_plan(table: dict[str, Any], p: Any) -> None:
    """Every op of plan `p` (and of its partitions' plans) into `table` by name.  Not a
    recursive closure: that would be a reference cycle per traced step."""
    for n in getattr(p, "nodes", ()) or ():
        table.setdefault(n.op.name, n.op)
    for sub in getattr(p, "partitions", ()) or ():
        _add_plan(table, getattr(sub, "plan", sub))
