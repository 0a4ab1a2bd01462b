"""Kernels of the queue ops (flowlab.ops.data_flow_ops).

The queue ops return the queue object of their (container, shared_name or op name)
from the device's resource manager, creating it on first use, as VariableV2 does.
Enqueue and dequeue kernels are asynchronous: they hand the queue a `done` callback
and return; the queue calls it at once when it can, or later from whichever thread
changes its state, or with CancelledError when the step is cancelled (timeout,
Session.close, another op failing).  No executor thread ever waits on a queue.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.queue_state import (
    FIFOState,
    PaddingFIFOState,
    PriorityState,
    QueueState,
    RandomShuffleState,
)
from flowlab.kernels.registry import CPU, kernel


def _queue_args(ctx: Any) -> tuple[Any, ...]:
    a = ctx.attrs
    dts = [d.as_numpy_dtype for d in a["component_types"]]
    shapes = [tuple(s) if s is not None else None for s in a["shapes"]] or None
    if shapes is not None and any(s is None for s in shapes):
        shapes = None
    return ctx.name, a["capacity"], dts, shapes


def _lookup(ctx: Any, make: Any) -> QueueState:
    a = ctx.attrs
    key = a["shared_name"] or ctx.name
    q = ctx.resources.get(a["container"], key)
    if q is None:
        q = ctx.resources.lookup_or_create(a["container"], key, make)
    return q


@kernel("FIFOQueueV2", devices=CPU)
def fifo_queue(ctx: Any) -> QueueState:
    return _lookup(ctx, lambda: FIFOState(*_queue_args(ctx)))


@kernel("PaddingFIFOQueueV2", devices=CPU)
def padding_fifo_queue(ctx: Any) -> QueueState:
    return _lookup(ctx, lambda: PaddingFIFOState(*_queue_args(ctx)))


@kernel("PriorityQueueV2", devices=CPU)
def priority_queue(ctx: Any) -> QueueState:
    def make() -> QueueState:
        name, cap, dts, shapes = _queue_args(ctx)
        return PriorityState(name, cap, [np.int64, *dts], None if shapes is None else [(), *shapes])

    return _lookup(ctx, make)


@kernel("RandomShuffleQueueV2", devices=CPU)
def random_shuffle_queue(ctx: Any) -> QueueState:
    a = ctx.attrs
    return _lookup(ctx, lambda: RandomShuffleState(
        *_queue_args(ctx), a["min_after_dequeue"], a["seed"], a["seed2"]))


def _scalar_priority(q: QueueState, values: Any, many: bool) -> None:
    if isinstance(q, PriorityState) and np.ndim(values[0]) != (1 if many else 0):
        raise errors.InvalidArgumentError(
            None, None,
            f"Shape mismatch in tuple component 0. Expected [{'?' if many else ''}], got "
            f"[{','.join(str(d) for d in np.shape(values[0]))}]",
        )


@kernel("QueueEnqueueV2", devices=CPU, asynchronous=True)
def queue_enqueue(ctx: Any, step: Any, done: Any, q: QueueState, *components: Any) -> None:
    q.check_components(components, many=False)
    if q.kind == "PriorityQueue":
        _scalar_priority(q, components, False)
    q.enqueue([components], step, done)


@kernel("QueueEnqueueManyV2", devices=CPU, asynchronous=True)
def queue_enqueue_many(ctx: Any, step: Any, done: Any, q: QueueState, *components: Any) -> None:
    q.check_components(components, many=True)
    _scalar_priority(q, components, True)
    sizes = {np.shape(c)[0] if np.ndim(c) else None for c in components}
    if None in sizes:
        raise errors.InvalidArgumentError(None, None, "EnqueueMany requires components of rank >= 1.")
    if len(sizes) != 1:
        raise errors.InvalidArgumentError(
            None, None, "EnqueueMany requires all components to have the same batch size."
        )
    n = sizes.pop()
    elements = [tuple(c[i] for c in components) for i in range(n)]
    if not elements:
        done(None)
        return
    q.enqueue(elements, step, done)


@kernel("QueueDequeueV2", devices=CPU, asynchronous=True)
def queue_dequeue(ctx: Any, step: Any, done: Any, q: QueueState) -> None:
    q.dequeue(1, False, step, done, single=True)


def _batch(q: QueueState, elements: list[tuple[Any, ...]], n: int) -> list[Any]:
    out = []
    padding = isinstance(q, PaddingFIFOState)
    for i, dt in enumerate(q.dtypes):
        vals = [e[i] for e in elements]
        if vals:
            shapes = [np.shape(v) for v in vals]
            if padding:
                inner = tuple(max(s[d] for s in shapes) for d in range(len(shapes[0])))
            else:
                inner = shapes[0]
                for s in shapes:
                    if s != inner:
                        raise errors.InvalidArgumentError(
                            None, None,
                            f"Shape mismatch in tuple component {i}. Expected "
                            f"[{','.join(map(str, inner))}], got [{','.join(map(str, s))}]",
                        )
        else:
            inner = tuple(q.shapes[i]) if q.shapes else ()
            inner = tuple(0 if d is None else d for d in inner)
        if dt.kind == "O":
            arr = np.full((len(vals), *inner), b"", dtype=object)
        elif padding:
            arr = np.zeros((len(vals), *inner), dtype=dt)
        else:
            arr = np.empty((len(vals), *inner), dtype=dt)
        for j, v in enumerate(vals):
            if padding:
                arr[(j, *(slice(0, d) for d in np.shape(v)))] = v
            else:
                arr[j] = v
        out.append(arr)
    return out


def _dequeue_n(ctx: Any, step: Any, done: Any, q: QueueState, n: Any, allow_small: bool) -> None:
    n = int(n)
    kind = "DequeueUpTo" if allow_small else "DequeueMany"
    if n < 0:
        raise errors.InvalidArgumentError(
            None, None, f"{kind} requested {n} < 0 elements")
    if q.shapes is None and not isinstance(q, PaddingFIFOState):
        raise errors.InvalidArgumentError(
            None, None,
            f"{q.kind}'s DequeueMany and DequeueUpTo require the components to have specified shapes.",
        )

    def cb(value: Any = None, error: BaseException | None = None) -> None:
        if error is not None:
            done(error=error)
            return
        try:
            done(_batch(q, value, n))
        except errors.OpError as e:
            done(error=e)

    if n == 0:
        cb([])
        return
    q.dequeue(n, allow_small, step, cb)


@kernel("QueueDequeueManyV2", devices=CPU, asynchronous=True, host_memory=("n",))
def queue_dequeue_many(ctx: Any, step: Any, done: Any, q: QueueState, n: Any) -> None:
    _dequeue_n(ctx, step, done, q, n, False)


@kernel("QueueDequeueUpToV2", devices=CPU, asynchronous=True, host_memory=("n",))
def queue_dequeue_up_to(ctx: Any, step: Any, done: Any, q: QueueState, n: Any) -> None:
    _dequeue_n(ctx, step, done, q, n, True)


@kernel("QueueCloseV2", devices=CPU)
def queue_close(ctx: Any, q: QueueState) -> None:
    q.close(ctx.attrs["cancel_pending_enqueues"])


@kernel("QueueSizeV2", devices=CPU)
def queue_size(ctx: Any, q: QueueState) -> Any:
    return np.int32(q.size())


@kernel("QueueIsClosedV2", devices=CPU)
def queue_is_closed(ctx: Any, q: QueueState) -> Any:
    return np.bool_(q.closed)
