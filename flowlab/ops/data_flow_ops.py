"""Queues: stateful ops with resource handles (paper section 3.1, `tf.FIFOQueue`).

A queue op (`FIFOQueueV2`, `RandomShuffleQueueV2`, `PriorityQueueV2`,
`PaddingFIFOQueueV2`) outputs a `resource` handle to a queue living in its device's
resource manager (flowlab.kernels.queue_state); the enqueue, dequeue, close, size and
is-closed ops take that handle, so placement colocates them with the queue.  Blocking
operations are asynchronous kernels (flowlab.kernels.queue_kernels).

The Python classes build the same ops, names and static shapes as TensorFlow 1.x:
`q.enqueue(x)` is "fifo_queue_enqueue" with its inputs converted as
"fifo_queue_enqueue/component_0", `q.dequeue_many(4)` is "fifo_queue_DequeueMany"
with a static batch dimension of 4.

    >>> q = FIFOQueue(3, [float32, int32], shapes=[[2], []])
    >>> x, y = q.dequeue()        # shapes (2,) and ()
"""

from __future__ import annotations

import functools
from typing import Any

from flowlab.graph import dtypes as _dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "QueueBase",
    "FIFOQueue",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "RandomShuffleQueue",
]

_QUEUE_ATTRS = [
    "component_types: list(type) >= 1", "shapes: list(shape) = []", "capacity: int = -1",
    "container: string = ''", "shared_name: string = ''",
]


def _handle_shape(op: Any) -> list[Any]:
    return [TensorShape([])]


def _unknown_components(op: Any) -> list[Any]:
    return [None] * len(op.get_attr("component_types"))


def _scalar(op: Any) -> list[Any]:
    return [TensorShape([])]


op_def("FIFOQueueV2", outputs=["handle: resource"], attrs=_QUEUE_ATTRS, shape_fn=_handle_shape,
       stateful=True, doc="A queue that produces elements in first-in first-out order.")
op_def("PaddingFIFOQueueV2", outputs=["handle: resource"], attrs=_QUEUE_ATTRS, shape_fn=_handle_shape,
       stateful=True, doc="A FIFO queue whose dequeue_many pads components to the largest shape.")
op_def("PriorityQueueV2", outputs=["handle: resource"],
       attrs=["component_types: list(type) >= 0 = []", "shapes: list(shape)", "capacity: int = -1",
              "container: string = ''", "shared_name: string = ''"],
       shape_fn=_handle_shape, stateful=True,
       doc="A queue that produces elements sorted by the first (int64) component.")
op_def("RandomShuffleQueueV2", outputs=["handle: resource"],
       attrs=[*_QUEUE_ATTRS, "min_after_dequeue: int = 0", "seed: int = 0", "seed2: int = 0"],
       shape_fn=_handle_shape, stateful=True, doc="A queue that randomizes the order of elements.")
op_def("QueueEnqueueV2", inputs=["handle: resource", "components: Tcomponents"],
       attrs=["Tcomponents: list(type) >= 1", "timeout_ms: int = -1"], stateful=True,
       doc="Enqueues a tuple of tensors; blocks (asynchronously) while the queue is full.")
op_def("QueueEnqueueManyV2", inputs=["handle: resource", "components: Tcomponents"],
       attrs=["Tcomponents: list(type) >= 1", "timeout_ms: int = -1"], stateful=True,
       doc="Enqueues zero or more tuples, slicing each component along its first dimension.")
op_def("QueueDequeueV2", inputs=["handle: resource"], outputs=["components: component_types"],
       attrs=["component_types: list(type) >= 1", "timeout_ms: int = -1"],
       shape_fn=_unknown_components, stateful=True, doc="Dequeues one tuple.")
op_def("QueueDequeueManyV2", inputs=["handle: resource", "n: int32"],
       outputs=["components: component_types"],
       attrs=["component_types: list(type) >= 1", "timeout_ms: int = -1"],
       shape_fn=_unknown_components, stateful=True, doc="Dequeues n tuples, concatenated.")
op_def("QueueDequeueUpToV2", inputs=["handle: resource", "n: int32"],
       outputs=["components: component_types"],
       attrs=["component_types: list(type) >= 1", "timeout_ms: int = -1"],
       shape_fn=_unknown_components, stateful=True,
       doc="Dequeues up to n tuples (fewer once the queue is closed).")
op_def("QueueCloseV2", inputs=["handle: resource"], attrs=["cancel_pending_enqueues: bool = false"],
       stateful=True, doc="Closes the queue: no more enqueues; dequeues drain it.")
op_def("QueueSizeV2", inputs=["handle: resource"], outputs=["size: int32"], shape_fn=_scalar,
       stateful=True, doc="The number of elements in the queue.")
op_def("QueueIsClosedV2", inputs=["handle: resource"], outputs=["is_closed: bool"], shape_fn=_scalar,
       stateful=True, doc="Whether the queue is closed.")


for _t in ("FIFOQueueV2", "PaddingFIFOQueueV2", "PriorityQueueV2", "RandomShuffleQueueV2",
           "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
           "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2", "QueueIsClosedV2"):
    not_differentiable(_t)


def _as_dtype_list(dtypes: Any) -> list[_dtypes.DType]:
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    return [_dtypes.as_dtype(d).base_dtype for d in dtypes]


def _as_shape_list(shapes: Any, dtypes: list[Any], unknown_dim_allowed: bool = False) -> list[TensorShape]:
    if shapes is None:
        return []
    # A list of dimensions (including the empty one, a scalar) is one shape, whatever
    # the number of dtypes: TensorFlow's rule (then the count check below).
    if not isinstance(shapes, (list, tuple)) or all(isinstance(d, int) or d is None for d in shapes):
        shapes = [shapes]
    out = [as_shape(s) for s in shapes]
    if not unknown_dim_allowed:
        for s in out:
            if not s.is_fully_defined():
                raise ValueError(f"All shapes must be fully defined: {out}")
    if len(out) != len(dtypes):
        raise ValueError("Queue shapes must have the same length as dtypes, "
                         f"received len(shapes)={len(out)}, len(dtypes)={len(dtypes)}")
    return out


def _shape_common(s1: Any, s2: Any) -> TensorShape:
    """The most specific shape both `s1` and `s2` are instances of."""
    s1, s2 = as_shape(s1), as_shape(s2)
    if s1.ndims is None or s2.ndims is None or s1.ndims != s2.ndims:
        return TensorShape(None)
    return TensorShape([d1 if d1 is not None and d1 == d2 else None
                        for d1, d2 in zip(s1.as_list(), s2.as_list())])


class QueueBase:
    """A queue's handle plus the builders of its ops (`tf.QueueBase`)."""

    def __init__(self, dtypes: list[_dtypes.DType], shapes: list[TensorShape], names: Any,
                 queue_ref: Any) -> None:
        self._dtypes = dtypes
        self._shapes = shapes if shapes else [TensorShape(None) for _ in dtypes]
        if names is not None:
            names = list(names) if isinstance(names, (list, tuple)) else [names]
            if len(names) != len(dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index: Any, queues: list[QueueBase]) -> QueueBase:
        """The queue `queues[index]`, chosen when the graph runs (`tf.QueueBase.from_list`):
        the handles are stacked and gathered; component dtypes and names must agree, and
        each shape is the most specific one all the queues share."""
        from flowlab.ops.array_ops import stack
        from flowlab.ops.slicing import gather

        if not queues or not isinstance(queues, list) or not all(
                isinstance(q, QueueBase) for q in queues):
            raise TypeError("A list of queues expected")
        first = queues[0]
        if not all(first.dtypes == q.dtypes for q in queues[1:]):
            raise TypeError("Queues do not have matching component dtypes.")
        if not all(first.names == q.names for q in queues[1:]):
            raise TypeError("Queues do not have matching component names.")
        shapes = [functools.reduce(_shape_common, s) for s in zip(*(q.shapes for q in queues))]
        selected = gather(stack([q.queue_ref for q in queues]), index)
        return QueueBase(dtypes=first.dtypes, shapes=shapes, names=first.names,
                         queue_ref=selected)

    # --- properties -----------------------------------------------------------------
    @property
    def queue_ref(self) -> Any:
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list[_dtypes.DType]:
        return self._dtypes

    @property
    def shapes(self) -> list[TensorShape]:
        return self._shapes

    @property
    def names(self) -> Any:
        return self._names

    # --- helpers --------------------------------------------------------------------
    def _check_enqueue_dtypes(self, vals: Any) -> list[Any]:
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(
                    f"Keys in dictionary to enqueue do not match names of Queue.  "
                    f"Dictionary: {sorted(vals.keys())}, Queue: {sorted(self._names)}"
                )
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components, got {len(vals)}")
        return [convert_to_tensor(v, dtype=dt, name=f"component_{i}")
                for i, (v, dt) in enumerate(zip(vals, self._dtypes))]

    def _scope(self, name: str | None, default: str) -> Any:
        return get_default_graph().name_scope(name or f"{self._name}_{default}")

    def _dequeue_return_value(self, tensors: Any) -> Any:
        if not isinstance(tensors, list):
            tensors = [tensors]
        if self._names:
            return dict(zip(self._names, tensors))
        if len(tensors) == 1:
            return tensors[0]
        return tensors

    # --- ops ------------------------------------------------------------------------
    def enqueue(self, vals: Any, name: str | None = None) -> Any:
        """Enqueue one element (a tensor, a list of components or a dict by name)."""
        with self._scope(name, "enqueue") as scope:
            vals = self._check_enqueue_dtypes(vals)
            for val, shape in zip(vals, self._shapes):
                val.shape.assert_is_compatible_with(shape)
            return apply_op("QueueEnqueueV2", handle=self._queue_ref, components=vals, name=scope)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Any:
        """Enqueue the slices of each component along dimension 0."""
        with self._scope(name, "EnqueueMany") as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch_dim = TensorShape([None])
            for val, shape in zip(vals, self._shapes):
                s = val.shape.with_rank_at_least(1)
                if s.dims is None:
                    continue
                batch_dim = batch_dim.merge_with(TensorShape(s.as_list()[:1]))
                TensorShape(s.as_list()[1:]).assert_is_compatible_with(shape)
            return apply_op("QueueEnqueueManyV2", handle=self._queue_ref, components=vals, name=scope)

    def dequeue(self, name: str | None = None) -> Any:
        """Dequeue one element; blocks while the queue is empty."""
        with self._scope(name, "Dequeue") as scope:
            ret = apply_op("QueueDequeueV2", handle=self._queue_ref, component_types=self._dtypes,
                           name=scope)
        for t, shape in zip(ret, self._shapes):
            t.set_shape(shape)
        return self._dequeue_return_value(ret)

    def _dequeue_n(self, op_type: str, default: str, n: Any, name: str | None, static: bool) -> Any:
        with self._scope(name, default) as scope:
            n_t = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
            ret = apply_op(op_type, handle=self._queue_ref, n=n_t, component_types=self._dtypes,
                           name=scope)
        batch = None
        if static:
            v = constant_value(n_t)
            batch = None if v is None else int(v)
        for t, shape in zip(ret, self._shapes):
            t.set_shape(TensorShape([batch]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """Dequeue `n` elements, concatenated along a new dimension 0."""
        return self._dequeue_n("QueueDequeueManyV2", "DequeueMany", n, name, True)

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """As dequeue_many, but a closed queue returns what it has left (at least 1)."""
        return self._dequeue_n("QueueDequeueUpToV2", "DequeueUpTo", n, name, False)

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Any:
        """Close the queue; pending enqueues are cancelled when asked."""
        with self._scope(name, "Close") as scope:
            return apply_op("QueueCloseV2", handle=self._queue_ref,
                            cancel_pending_enqueues=cancel_pending_enqueues, name=scope)

    def is_closed(self, name: str | None = None) -> Any:
        with self._scope(name, "Is_Closed") as scope:
            return apply_op("QueueIsClosedV2", handle=self._queue_ref, name=scope)

    def size(self, name: str | None = None) -> Any:
        with self._scope(name, "Size") as scope:
            return apply_op("QueueSizeV2", handle=self._queue_ref, name=scope)


def _shapes_attr(shapes: list[TensorShape]) -> list[Any]:
    return [s.as_list() if s.dims is not None else None for s in shapes]


class FIFOQueue(QueueBase):
    """A queue that dequeues in first-in first-out order (`tf.FIFOQueue`)."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "fifo_queue") -> None:
        dts = _as_dtype_list(dtypes)
        shs = _as_shape_list(shapes, dts)
        ref = apply_op("FIFOQueueV2", component_types=dts, shapes=_shapes_attr(shs), capacity=capacity,
                       shared_name=shared_name or "", name=name)
        super().__init__(dts, shs, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose `dequeue_many` pads each component to the batch's largest
    shape (dimensions declared None vary between elements)."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any, names: Any = None,
                 shared_name: str | None = None, name: str = "padding_fifo_queue") -> None:
        dts = _as_dtype_list(dtypes)
        if shapes is None:
            raise ValueError("Shapes must be provided.")
        shs = _as_shape_list(shapes, dts, unknown_dim_allowed=True)
        if len(shs) != len(dts):
            raise ValueError(
                f"Shapes must be provided for all components, but received {len(dts)} dtypes "
                f"and {len(shs)} shapes."
            )
        ref = apply_op("PaddingFIFOQueueV2", component_types=dts, shapes=_shapes_attr(shs),
                       capacity=capacity, shared_name=shared_name or "", name=name)
        super().__init__(dts, shs, names, ref)


class PriorityQueue(QueueBase):
    """A queue ordered by an int64 priority, the first component of each element,
    smallest first (`tf.PriorityQueue`)."""

    def __init__(self, capacity: int, types: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "priority_queue") -> None:
        dts = _as_dtype_list(types)
        shs = _as_shape_list(shapes, dts)
        ref = apply_op("PriorityQueueV2", component_types=dts, shapes=_shapes_attr(shs),
                       capacity=capacity, shared_name=shared_name or "", name=name)
        all_types = [_dtypes.int64, *dts]
        all_shapes = [TensorShape([]), *(shs if shs else [TensorShape(None) for _ in dts])]
        super().__init__(all_types, all_shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues a random element, keeping `min_after_dequeue` back until
    closed (`tf.RandomShuffleQueue`)."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None,
                 names: Any = None, seed: int | None = None, shared_name: str | None = None,
                 name: str = "random_shuffle_queue") -> None:
        from flowlab.ops.random_ops import get_seed

        dts = _as_dtype_list(dtypes)
        shs = _as_shape_list(shapes, dts)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            seed2 = 0  # TensorFlow: shared queues get the same seed in every graph
        ref = apply_op("RandomShuffleQueueV2", component_types=dts, shapes=_shapes_attr(shs),
                       capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed1,
                       seed2=seed2, shared_name=shared_name or "", name=name)
        super().__init__(dts, shs, names, ref)
