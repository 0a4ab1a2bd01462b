"""Input pipelines from queues (`tf.train.batch`, `string_input_producer`, ...).

Each function builds a queue, the ops that fill it, and a `QueueRunner` (added to
the QUEUE_RUNNERS collection) whose threads run those ops once
`start_queue_runners` is called.  Producers (`input_producer` and its string, range
and slice forms) enqueue a whole tensor per step, optionally shuffled, and stop after
`num_epochs` (a local "epochs" counter whose CountUpTo raises OutOfRangeError, which
closes the queue).  Batchers (`batch`, `shuffle_batch` and their `_join` forms)
enqueue single examples (or slices with `enqueue_many`) from `num_threads` threads and
dequeue `batch_size` of them, as TensorFlow 1.x builds them; summaries are not built.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes as _dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.core_ops import identity
from flowlab.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from flowlab.train.queue_runner import QueueRunner, add_queue_runner

__all__ = [
    "match_filenames_once",
    "limit_epochs",
    "input_producer",
    "string_input_producer",
    "range_input_producer",
    "slice_input_producer",
    "batch",
    "batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
]


def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Any:
    """`tensor`, but only `num_epochs` times: later steps raise OutOfRangeError."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    from flowlab.ops.constant_op import constant
    from flowlab.ops.variables import Variable

    g = get_default_graph()
    with g.name_scope(name or "limit_epochs") as scope:
        zero64 = constant(0, dtype=_dtypes.int64)
        epochs = Variable(zero64, name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with g.control_dependencies([counter]):
            return identity(tensor, name=scope)


def match_filenames_once(pattern: Any, name: str | None = None) -> Any:
    """A local variable holding the file names matching `pattern`, computed once when
    local variables are initialized."""
    from flowlab.ops.io_ops import matching_files
    from flowlab.ops.variables import Variable

    with get_default_graph().name_scope(name or "matching_filenames") as scope:
        return Variable(name=scope, initial_value=matching_files(pattern), trainable=False,
                        validate_shape=False, collections=[GraphKeys.LOCAL_VARIABLES])


def input_producer(input_tensor: Any, element_shape: Any = None, num_epochs: int | None = None,
                   shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                   shared_name: str | None = None, summary_name: str | None = None,
                   name: str | None = None, cancel_op: Any = None) -> FIFOQueue:
    """A queue filled with the rows of `input_tensor`, epoch after epoch."""
    from flowlab.ops.random_ops import random_shuffle

    with get_default_graph().name_scope(name or "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        rows = input_tensor.shape
        inner = TensorShape(None) if rows.dims is None else TensorShape(rows.as_list()[1:])
        element_shape = inner.merge_with(as_shape(element_shape)) if element_shape is not None else inner
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape "
                             "or `element_shape` must be specified")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                      shapes=[element_shape], shared_name=shared_name, name=name or "fifo_queue")
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        return q


def string_input_producer(string_tensor: Any, num_epochs: int | None = None, shuffle: bool = True,
                          seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                          name: str | None = None, cancel_op: Any = None) -> FIFOQueue:
    """A queue of strings (file names), for readers."""
    from flowlab.ops.const_fold import constant_value

    with get_default_graph().name_scope(name or "input_producer") as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=_dtypes.string)
        v = constant_value(string_tensor)
        if v is not None and v.size == 0:
            raise ValueError("string_input_producer requires a non-null input tensor")
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              None, scope, cancel_op)


def range_input_producer(limit: int, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                         name: str | None = None) -> FIFOQueue:
    """A queue of the integers 0 .. limit-1 (int32)."""
    from flowlab.ops.math_ops import range as _range

    with get_default_graph().name_scope(name or "input_producer") as scope:
        return input_producer(_range(limit), [], num_epochs, shuffle, seed, capacity, shared_name,
                              name=scope)


def slice_input_producer(tensor_list: list[Any], num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                         name: str | None = None) -> list[Any]:
    """One row of every tensor of `tensor_list` per dequeue (the same row index)."""
    from flowlab.ops.slicing import gather

    with get_default_graph().name_scope(name or "input_producer"):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        n = tensor_list[0].shape.as_list()[0] if tensor_list[0].shape.dims else None
        if n is None:
            raise ValueError("slice_input_producer needs a known first dimension here")
        q = range_input_producer(n, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                                 capacity=capacity, shared_name=shared_name)
        index = q.dequeue()
        return [gather(t, index) for t in tensor_list]


# --- batching -----------------------------------------------------------------------
def _as_tensor_list(tensors: Any) -> list[Any]:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors)]
    return list(tensors)


def _as_original_type(original: Any, dequeued: Any) -> Any:
    if isinstance(original, dict):
        if len(original) == 1:
            dequeued = [dequeued]
        return {k: dequeued[i] for i, k in enumerate(sorted(original))}
    return dequeued


def _validate(tensor_list: list[Any]) -> list[Any]:
    tensor_list = [convert_to_tensor(t) for t in tensor_list]
    if not tensor_list:
        raise ValueError("Expected at least one tensor in batch().")
    return tensor_list


def _shapes(tensor_list_list: list[list[Any]], shapes: Any, enqueue_many: bool,
            dynamic_pad: bool = False) -> list[TensorShape]:
    if shapes is not None:
        return [as_shape(s) for s in shapes]
    def element(shape: TensorShape) -> TensorShape:
        if not enqueue_many:
            return shape
        shape = shape.with_rank_at_least(1)
        return shape if shape.dims is None else TensorShape(shape.as_list()[1:])

    out = []
    for i, t in enumerate(tensor_list_list[0]):
        s = element(t.shape)
        for tl in tensor_list_list[1:]:
            s = s.merge_with(element(tl[i].shape))
        if s.dims is None or (not dynamic_pad and not s.is_fully_defined()):
            raise ValueError(f"All shapes must be fully defined: {[t.shape for t in tensor_list_list[0]]}")
        out.append(s)
    return out


def _enqueue(queue: Any, tensor_list_list: list[list[Any]], threads: int, enqueue_many: bool) -> None:
    op = queue.enqueue_many if enqueue_many else queue.enqueue
    if len(tensor_list_list) == 1:
        enqueue_ops = [op(tensor_list_list[0])] * threads
    else:
        enqueue_ops = [op(tl) for tl in tensor_list_list]
    add_queue_runner(QueueRunner(queue, enqueue_ops))


def _batch(tensor_list_list: list[list[Any]], original: Any, batch_size: Any, num_threads: int,
           capacity: int, enqueue_many: bool, shapes: Any, dynamic_pad: bool,
           allow_smaller_final_batch: bool, shared_name: str | None, scope: str,
           shuffle: tuple[int, int | None] | None = None) -> Any:
    tensor_list_list = [_validate(tl) for tl in tensor_list_list]
    types = [t.dtype.base_dtype for t in tensor_list_list[0]]
    for tl in tensor_list_list[1:]:
        if [t.dtype.base_dtype for t in tl] != types:
            raise TypeError(f"Expected types to be {types} but got {[t.dtype for t in tl]}")
    shps = _shapes(tensor_list_list, shapes, enqueue_many, dynamic_pad)
    if shuffle is not None:
        queue: Any = RandomShuffleQueue(capacity=capacity, min_after_dequeue=shuffle[0], seed=shuffle[1],
                                        dtypes=types, shapes=shps, shared_name=shared_name)
    elif dynamic_pad:
        queue = PaddingFIFOQueue(capacity=capacity, dtypes=types, shapes=shps, shared_name=shared_name)
    else:
        queue = FIFOQueue(capacity=capacity, dtypes=types, shapes=shps, shared_name=shared_name)
    _enqueue(queue, tensor_list_list, num_threads, enqueue_many)
    if allow_smaller_final_batch:
        dequeued = queue.dequeue_up_to(batch_size, name=scope)
    else:
        dequeued = queue.dequeue_many(batch_size, name=scope)
    return _as_original_type(original, dequeued)


def batch(tensors: Any, batch_size: Any, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: str | None = None,
          name: str | None = None) -> Any:
    """Batches of `batch_size` examples, in order, from a FIFO queue filled by
    `num_threads` threads (a PaddingFIFOQueue with `dynamic_pad`)."""
    with get_default_graph().name_scope(name or "batch") as scope:
        return _batch([_as_tensor_list(tensors)], tensors, batch_size, num_threads, capacity,
                      enqueue_many, shapes, dynamic_pad, allow_smaller_final_batch, shared_name, scope)


def batch_join(tensors_list: Any, batch_size: Any, capacity: int = 32, enqueue_many: bool = False,
               shapes: Any = None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
               shared_name: str | None = None, name: str | None = None) -> Any:
    """As `batch`, with one enqueueing thread per tensor list."""
    with get_default_graph().name_scope(name or "batch_join") as scope:
        lists = [_as_tensor_list(t) for t in tensors_list]
        return _batch(lists, tensors_list[0], batch_size, len(lists), capacity, enqueue_many, shapes,
                      dynamic_pad, allow_smaller_final_batch, shared_name, scope)


def shuffle_batch(tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: int | None = None, enqueue_many: bool = False,
                  shapes: Any = None, allow_smaller_final_batch: bool = False,
                  shared_name: str | None = None, name: str | None = None) -> Any:
    """Batches of randomly chosen examples from a RandomShuffleQueue that keeps
    `min_after_dequeue` examples back for mixing."""
    with get_default_graph().name_scope(name or "shuffle_batch") as scope:
        return _batch([_as_tensor_list(tensors)], tensors, batch_size, num_threads, capacity,
                      enqueue_many, shapes, False, allow_smaller_final_batch, shared_name, scope,
                      shuffle=(min_after_dequeue, seed))


def shuffle_batch_join(tensors_list: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                       seed: int | None = None, enqueue_many: bool = False, shapes: Any = None,
                       allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                       name: str | None = None) -> Any:
    """As `shuffle_batch`, with one enqueueing thread per tensor list."""
    with get_default_graph().name_scope(name or "shuffle_batch_join") as scope:
        lists = [_as_tensor_list(t) for t in tensors_list]
        return _batch(lists, tensors_list[0], batch_size, len(lists), capacity, enqueue_many, shapes,
                      False, allow_smaller_final_batch, shared_name, scope,
                      shuffle=(min_after_dequeue, seed))
