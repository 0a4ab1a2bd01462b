"""Kernels of the `tf.data` ops (flowlab.ops.dataset_ops), CPU only.

A dataset kernel builds a `DatasetValue` (flowlab.kernels.dataset_values) from its
input datasets, its scalar arguments and its function attr; it reads no data.  A
function attr (`f`, `predicate`) holds an object with `call(args) -> outputs`
(flowlab.data.function: a traced function graph run by its own session), called
with an element's components followed by the captured `other_arguments`.

An iterator is an `IteratorState` in the device's resource manager under its op's
name (or shared_name), created on first use as a queue is.  `MakeIterator` starts a
fresh pass over a dataset; `IteratorGetNext` pulls one element under the state's
lock (concurrent steps get distinct elements) and turns the end of the pass into
OutOfRangeError, again on every later call until the iterator is re-initialized.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import dataset_order_values as order
from flowlab.kernels import dataset_values as dv
from flowlab.kernels.record_io import open_read, read_lines, read_tfrecords
from flowlab.kernels.registry import CPU, kernel

# Python generators of `Dataset.from_generator`, by token (the op's `token` attr), as
# TensorFlow's py_func registry: graphs hold the token, this process holds the callable.
GENERATORS: dict[str, Callable[[], Any]] = {}
_GENERATORS_LOCK = threading.Lock()


def register_generator(make: Callable[[], Any]) -> str:
    """Keep `make` (called once per pass: returns the generator and converter) and
    return its token."""
    with _GENERATORS_LOCK:
        token = f"flowlab_generator_{len(GENERATORS)}"
        GENERATORS[token] = make
    return token


def _int(x: Any) -> int:
    return int(np.asarray(x))


def _body(fn: Any, ctx: Any) -> Any:
    """The traced function of a func attr; a bare name (a graph imported from a GraphDef,
    which holds no function bodies) cannot run."""
    if not hasattr(fn, "call"):
        raise errors.UnimplementedError(
            None, None,
            f"{ctx.op_type} '{ctx.name}': its function {fn!r} has no body in this process. "
            "Dataset functions are traced graphs of the process that built the dataset; a "
            "GraphDef names them but does not hold them: build the dataset here.")
    return fn


def _call(fn: Any, captured: tuple[Any, ...]) -> Callable[[dv.Element], list[Any]]:
    # A function with state (a random op) gets an instance per run of the dataset op
    # (per iterator initialization), made on its first element: TensorFlow's per-iterator
    # instantiation.  A one-shot iterator's later runs of the op build values never
    # iterated, so they make no session.
    call = fn.instance() if getattr(fn, "stateful", False) else fn.call

    def apply(element: dv.Element) -> list[Any]:
        return call([*element, *captured])  # type: ignore[no-any-return]

    return apply


def _map(inp: dv.DatasetValue, fn: Any, captured: tuple[Any, ...], parallel: int = 0
         ) -> dv.Map:
    """A map of `fn`, with its batch form when `fn` is element-wise (`fn.batched`: a
    traced function's, flowlab.data.vectorize)."""
    batched = getattr(fn, "batched", None)
    return dv.Map(inp, _call(fn, captured), parallel,
                  None if batched is None else _call(batched, captured))


def _returns_dataset(fn: Any, captured: tuple[Any, ...]) -> Callable[[dv.Element], dv.DatasetValue]:
    call = _call(fn, captured)

    def make(element: dv.Element) -> dv.DatasetValue:
        out = call(element)[0]
        if not isinstance(out, dv.DatasetValue):
            raise errors.InvalidArgumentError(None, None, "The function must return a dataset.")
        return out

    return make


# --- sources ----------------------------------------------------------------------
@kernel("TensorDataset", devices=CPU)
def tensor_dataset(ctx: Any, *components: Any) -> dv.DatasetValue:
    return dv.Tensors(tuple(np.asarray(c) if not isinstance(c, dv.DatasetValue) else c
                            for c in components))


@kernel("TensorSliceDataset", devices=CPU)
def tensor_slice_dataset(ctx: Any, *components: Any) -> dv.DatasetValue:
    return dv.Slices(tuple(np.asarray(c) for c in components))


@kernel("RangeDataset", devices=CPU)
def range_dataset(ctx: Any, start: Any, stop: Any, step: Any) -> dv.DatasetValue:
    dt = ctx.attrs["output_types"][0].as_numpy_dtype
    return dv.Range(_int(start), _int(stop), _int(step), dt)


@kernel("ZipDataset", devices=CPU)
def zip_dataset(ctx: Any, *inputs: dv.DatasetValue) -> dv.DatasetValue:
    return dv.Zip(list(inputs))


@kernel("ConcatenateDataset", devices=CPU)
def concatenate_dataset(ctx: Any, first: dv.DatasetValue, second: dv.DatasetValue) -> dv.DatasetValue:
    return dv.Concatenate(first, second)


def _filenames(filenames: Any) -> list[str]:
    arr = np.asarray(filenames, dtype=object)
    if arr.ndim > 1:
        raise errors.InvalidArgumentError(
            None, None, "`filenames` must be a scalar or a vector.")
    return [f.decode() if isinstance(f, bytes) else str(f) for f in arr.reshape(-1)]


def _compression(c: Any) -> str:
    v = np.asarray(c, dtype=object).item()
    return v.decode() if isinstance(v, bytes) else str(v)


@kernel("TextLineDataset", devices=CPU)
def text_line_dataset(ctx: Any, filenames: Any, compression: Any, buffer_size: Any) -> dv.DatasetValue:
    c = _compression(compression)
    return dv.Records(_filenames(filenames), lambda name: read_lines(name, c))


@kernel("TFRecordDataset", devices=CPU)
def tf_record_dataset(ctx: Any, filenames: Any, compression: Any, buffer_size: Any) -> dv.DatasetValue:
    c = _compression(compression)
    return dv.Records(_filenames(filenames), lambda name: read_tfrecords(name, c))


def _fixed_length_records(name: str, header: int, record: int, footer: int,
                          compression: str) -> Iterator[bytes]:
    with open_read(name, compression) as f:
        data = f.read()
    body = len(data) - header - footer
    if body < 0:
        body = 0
    if body % record and not compression:
        raise errors.InvalidArgumentError(
            None, None, f"Excluding the header ({header} bytes) and footer ({footer} bytes), "
            f"input file \"{name}\" has body length {body} bytes, which is not an exact "
            f"multiple of the record length ({record} bytes).")
    for i in range(body // record):
        yield data[header + i * record: header + (i + 1) * record]


@kernel("FixedLengthRecordDatasetV2", devices=CPU)
def fixed_length_record_dataset(ctx: Any, filenames: Any, header: Any, record: Any, footer: Any,
                                buffer_size: Any, compression: Any) -> dv.DatasetValue:
    h, r, f = int(header), int(record), int(footer)
    if h < 0:
        raise errors.InvalidArgumentError(None, None, "`header_bytes` must be >= 0")
    if r <= 0:
        raise errors.InvalidArgumentError(None, None, "`record_bytes` must be > 0")
    if f < 0:
        raise errors.InvalidArgumentError(None, None, "`footer_bytes` must be >= 0")
    c = _compression(compression)
    return dv.Records(_filenames(filenames),
                      lambda name: _fixed_length_records(name, h, r, f, c))


@kernel("GeneratorDataset", devices=CPU)
def generator_dataset(ctx: Any) -> dv.DatasetValue:
    token = ctx.attrs["token"]
    make = GENERATORS.get(token)
    if make is None:
        raise errors.NotFoundError(
            None, None, f"The generator of '{ctx.name}' ({token}) is not in this process; "
            "Dataset.from_generator's callable lives in the process that built the graph.")

    def generator() -> Iterator[Any]:
        return make()  # type: ignore[no-any-return]

    return dv.Generated(generator, lambda x: x)


# --- transformations --------------------------------------------------------------
@kernel("MapDataset", devices=CPU)
def map_dataset(ctx: Any, inp: dv.DatasetValue, *captured: Any) -> dv.DatasetValue:
    return _map(inp, _body(ctx.attrs["f"], ctx), captured)


@kernel("ParallelMapDatasetV2", devices=CPU)
def parallel_map_dataset(ctx: Any, inp: dv.DatasetValue, *rest: Any) -> dv.DatasetValue:
    *captured, n = rest
    n = _int(n)
    if n <= 0 and n != dv.AUTOTUNE:
        raise errors.InvalidArgumentError(
            None, None, "num_parallel_calls must be greater than zero.")
    return _map(inp, _body(ctx.attrs["f"], ctx), tuple(captured), n)


@kernel("FilterDataset", devices=CPU)
def filter_dataset(ctx: Any, inp: dv.DatasetValue, *captured: Any) -> dv.DatasetValue:
    return dv.Filter(inp, _call(_body(ctx.attrs["predicate"], ctx), captured))


@kernel("FlatMapDataset", devices=CPU)
def flat_map_dataset(ctx: Any, inp: dv.DatasetValue, *captured: Any) -> dv.DatasetValue:
    return dv.FlatMap(inp, _returns_dataset(_body(ctx.attrs["f"], ctx), captured))


@kernel("InterleaveDataset", devices=CPU)
def interleave_dataset(ctx: Any, inp: dv.DatasetValue, *rest: Any) -> dv.DatasetValue:
    *captured, cycle, block = rest
    return dv.Interleave(inp, _returns_dataset(_body(ctx.attrs["f"], ctx), tuple(captured)), _int(cycle),
                         _int(block))


@kernel("BatchDatasetV2", devices=CPU)
def batch_dataset(ctx: Any, inp: dv.DatasetValue, size: Any, drop: Any) -> dv.DatasetValue:
    return dv.Batch(inp, _int(size), bool(drop))


@kernel("PaddedBatchDatasetV2", devices=CPU)
def padded_batch_dataset(ctx: Any, inp: dv.DatasetValue, size: Any, *rest: Any) -> dv.DatasetValue:
    n = ctx.attrs["N"]
    shapes = [tuple(int(d) for d in np.asarray(s).reshape(-1)) for s in rest[:n]]
    values = [np.asarray(v) for v in rest[n:2 * n]]
    for i, v in enumerate(values):
        if v.ndim:
            raise errors.InvalidArgumentError(
                None, None, f"All padding values must be scalars; got a value of shape "
                f"{list(v.shape)} for component {i}")
    return dv.PaddedBatch(inp, _int(size), bool(rest[2 * n]), shapes, values)


@kernel("UnbatchDataset", devices=CPU)
def unbatch_dataset(ctx: Any, inp: dv.DatasetValue) -> dv.DatasetValue:
    return dv.Unbatch(inp)


@kernel("ShuffleDataset", devices=CPU)
def shuffle_dataset(ctx: Any, inp: dv.DatasetValue, buffer_size: Any, seed: Any,
                    seed2: Any) -> dv.DatasetValue:
    return order.Shuffle(inp, _int(buffer_size), _int(seed), _int(seed2),
                      ctx.attrs["reshuffle_each_iteration"])


@kernel("RepeatDataset", devices=CPU)
def repeat_dataset(ctx: Any, inp: dv.DatasetValue, count: Any) -> dv.DatasetValue:
    return order.Repeat(inp, _int(count))


@kernel("PrefetchDataset", devices=CPU)
def prefetch_dataset(ctx: Any, inp: dv.DatasetValue, buffer_size: Any) -> dv.DatasetValue:
    return order.Prefetch(inp, _int(buffer_size))


@kernel("TakeDataset", devices=CPU)
def take_dataset(ctx: Any, inp: dv.DatasetValue, count: Any) -> dv.DatasetValue:
    return order.Take(inp, _int(count))


@kernel("SkipDataset", devices=CPU)
def skip_dataset(ctx: Any, inp: dv.DatasetValue, count: Any) -> dv.DatasetValue:
    return order.Skip(inp, _int(count))


@kernel("CacheDataset", devices=CPU)
def cache_dataset(ctx: Any, inp: dv.DatasetValue, filename: Any) -> dv.DatasetValue:
    if _compression(filename):
        raise errors.UnimplementedError(
            None, None, "flowlab caches datasets in memory only: call cache() without a "
            "filename.")
    return order.Cache(inp)


# --- iterators --------------------------------------------------------------------
class IteratorState:
    """One iterator: the current pass over a dataset, or None before MakeIterator."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._pass: Iterator[dv.Element] | None = None
        self._ended = False

    def start(self, dataset: dv.DatasetValue) -> None:
        fresh = dataset.iterate()
        with self._lock:
            old, self._pass, self._ended = self._pass, fresh, False
        close = getattr(old, "close", None)
        if close is not None:
            close()

    @property
    def started(self) -> bool:
        return self._pass is not None

    def get_next(self) -> dv.Element:
        with self._lock:
            if self._pass is None:
                raise errors.FailedPreconditionError(
                    None, None,
                    "GetNext() failed because the iterator has not been initialized. Ensure "
                    "that you have run the initializer operation for this iterator before "
                    "getting the next element.")
            if self._ended:
                raise errors.OutOfRangeError(None, None, "End of sequence")
            try:
                return next(self._pass)
            except StopIteration:
                self._ended = True
                raise errors.OutOfRangeError(None, None, "End of sequence") from None


def _iterator(ctx: Any) -> IteratorState:
    a = ctx.attrs
    key = a["shared_name"] or ctx.name
    return ctx.resources.lookup_or_create(a["container"], key, lambda: IteratorState(key))  # type: ignore[no-any-return]


@kernel("IteratorV2", devices=CPU)
def iterator_v2(ctx: Any) -> IteratorState:
    return _iterator(ctx)


@kernel("OneShotIterator", devices=CPU)
def one_shot_iterator(ctx: Any, dataset: dv.DatasetValue) -> IteratorState:
    it = _iterator(ctx)
    if not it.started:
        with _ONE_SHOT_LOCK:
            if not it.started:
                it.start(dataset)
    return it


_ONE_SHOT_LOCK = threading.Lock()


@kernel("MakeIterator", devices=CPU)
def make_iterator(ctx: Any, dataset: dv.DatasetValue, it: IteratorState) -> None:
    it.start(dataset)


@kernel("IteratorGetNext", devices=CPU)
def iterator_get_next(ctx: Any, it: IteratorState) -> list[Any]:
    element = it.get_next()
    shapes = ctx.attrs["output_shapes"]
    out = []
    for i, (c, want) in enumerate(zip(element, shapes)):
        if isinstance(c, (bytes, str)):
            c = np.array(c, dtype=object)
        elif not isinstance(c, dv.DatasetValue):
            c = np.asarray(c)
        if want is not None and not isinstance(c, dv.DatasetValue):
            got = np.shape(c)
            if len(got) != len(want) or any(w is not None and w != g for w, g in zip(want, got)):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Incompatible shapes at component {i}: expected "
                    f"[{','.join('?' if w is None else str(w) for w in want)}] but got "
                    f"[{','.join(str(g) for g in got)}].")
        out.append(c)
    return out


@kernel("IteratorToStringHandle", devices=CPU)
def iterator_to_string_handle(ctx: Any, it: IteratorState) -> Any:
    return np.array(it.name.encode(), dtype=object)


@kernel("IteratorFromStringHandleV2", devices=CPU)
def iterator_from_string_handle(ctx: Any, handle: Any) -> IteratorState:
    v = np.asarray(handle, dtype=object).item()
    name = v.decode() if isinstance(v, bytes) else str(v)
    it = ctx.resources.get("", name)
    if not isinstance(it, IteratorState):
        raise errors.InvalidArgumentError(
            None, None, f"Could not find an iterator for the string handle {name!r}: make it "
            "with iterator.string_handle() in this session.")
    return it
