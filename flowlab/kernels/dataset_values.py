"""The run-time values of dataset ops: descriptions of element sequences.

A `DatasetValue` is what a dataset op's `variant` output holds.  It is immutable
and cheap to build; `iterate()` starts a fresh pass and returns a Python iterator of
elements, each a tuple of NumPy arrays (the flat components, strings as object
arrays of bytes).  Pulling is lazy: an element is produced when the consumer asks
for it (IteratorGetNext, flowlab.kernels.dataset_kernels), on the consumer's thread,
except below a `Prefetch`, whose producer runs on its own thread.

Errors raised while producing an element (a map function's InvalidArgumentError, a
corrupt record's DataLossError) reach the consumer as they are; the end of the
sequence is `StopIteration`, which the iterator turns into OutOfRangeError.

The order and amount transformations (shuffle, repeat, take, skip, cache, prefetch)
are in flowlab.kernels.dataset_order_values.

Batches of rows: when a batch's input is `from_tensor_slices` (possibly shuffled), the
pass runs over row numbers (`row_source`: the same shuffle draws, on ints) and each
batch is one gather per component, `c[rows]`, which equals stacking those rows one by
one -- the common `from_tensor_slices(arrays).shuffle(n).repeat().batch(b)` pipeline
then does per element only the shuffle's integer bookkeeping (repeat, take and skip
pass row numbers on too: flowlab.kernels.dataset_order_values).  A `map` whose function works
element by element (flowlab.data.vectorize) keeps its input's rows: its function then
runs once on each gathered batch (`MappedRows`), which gives the values of running it
on each row, in `from_tensor_slices(arrays).shuffle(n).map(f).batch(b)` too.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from flowlab import errors

Element = tuple[Any, ...]
Fn = Callable[[Element], list[Any]]
# A row source: rows with `.n` and `.rows(indices)` (a `Slices` or `MappedRows`), and
# the pass's row numbers in order (None: 0, 1, ..., n - 1).
RowSource = tuple[Any, Iterator[int] | None]


def row_order(rs: RowSource) -> Iterator[int]:
    """The row numbers of a row source's pass, in order."""
    rows, order = rs
    return iter(range(rows.n)) if order is None else order

AUTOTUNE = -1


def cpus() -> int:
    """The CPUs this process may run on (TensorFlow's MaxParallelism, AUTOTUNE's value)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _row(c: Any, i: int) -> Any:
    """Row `i` of `c`, an array even for strings (indexing an object array gives the
    bytes themselves)."""
    if c.dtype == object:
        return c[i:i + 1].reshape(c.shape[1:])
    return c[i]


class DatasetValue:
    """A sequence of elements; `iterate()` starts a fresh pass over it."""

    def iterate(self) -> Iterator[Element]:
        raise NotImplementedError

    def row_source(self) -> RowSource | None:
        """For a pass whose elements are rows of a `Slices` (possibly mapped): those
        rows and the row numbers in order (None when the pass is not made of rows).
        `Batch` then gathers each batch with one indexing per component instead of
        stacking rows one by one."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


# --- sources ----------------------------------------------------------------------
class Tensors(DatasetValue):
    def __init__(self, components: Element) -> None:
        self.components = components

    def iterate(self) -> Iterator[Element]:
        yield self.components


class Slices(DatasetValue):
    def __init__(self, components: Element) -> None:
        sizes = {np.shape(c)[0] if np.ndim(c) else None for c in components}
        if None in sizes:
            raise _invalid("All components must be at least 1-dimensional")
        if len(sizes) != 1:
            first = np.shape(components[0])[0]
            for i, c in enumerate(components):
                if np.shape(c)[0] != first:
                    raise _invalid(
                        f"All components must have the same size in the 0th dimension, but "
                        f"component 0 has size {first} and component {i} has size {np.shape(c)[0]}")
        self.components = components
        self.n = sizes.pop()

    def iterate(self) -> Iterator[Element]:
        cs = self.components
        for i in range(self.n):
            yield tuple(_row(c, i) for c in cs)

    def row_source(self) -> RowSource:
        return self, None

    def rows(self, indices: list[int]) -> Element:
        """The rows `indices`, stacked: what Batch makes of those elements."""
        idx = np.asarray(indices, dtype=np.intp)
        return tuple(c[idx] for c in self.components)


class Range(DatasetValue):
    def __init__(self, start: int, stop: int, step: int, dtype: Any) -> None:
        if step == 0:
            raise _invalid("step must be a non-zero integer.")
        self.args = (start, stop, step)
        self.dtype = dtype

    def iterate(self) -> Iterator[Element]:
        dt = self.dtype
        for v in range(*self.args):
            yield (np.array(v, dtype=dt),)


class Zip(DatasetValue):
    def __init__(self, inputs: list[DatasetValue]) -> None:
        self.inputs = inputs

    def iterate(self) -> Iterator[Element]:
        its = [d.iterate() for d in self.inputs]
        while True:
            out: list[Any] = []
            for it in its:
                try:
                    out.extend(next(it))
                except StopIteration:
                    return
            yield tuple(out)


class Concatenate(DatasetValue):
    def __init__(self, first: DatasetValue, second: DatasetValue) -> None:
        self.first, self.second = first, second

    def iterate(self) -> Iterator[Element]:
        yield from self.first.iterate()
        yield from self.second.iterate()


class Generated(DatasetValue):
    """A Python generator's values, converted to the declared dtypes and checked
    against the declared shapes (`Dataset.from_generator`)."""

    def __init__(self, generator: Callable[[], Any], convert: Callable[[Any], Element]) -> None:
        self.generator = generator
        self.convert = convert

    def iterate(self) -> Iterator[Element]:
        for value in self.generator():
            yield self.convert(value)


class Records(DatasetValue):
    """The records (or lines) of files, file after file; `read(name)` yields bytes."""

    def __init__(self, filenames: list[str], read: Callable[[str], Iterator[bytes]]) -> None:
        self.filenames = filenames
        self.read = read

    def iterate(self) -> Iterator[Element]:
        for name in self.filenames:
            for rec in self.read(name):
                yield (np.array(rec, dtype=object),)


# --- element-wise transformations -----------------------------------------------
class Map(DatasetValue):
    """`fn` applied to each element; `batched`, when given, is the same function applied
    to a batch of stacked elements at once (flowlab.data.vectorize)."""

    def __init__(self, inp: DatasetValue, fn: Fn, parallel: int = 0,
                 batched: Fn | None = None) -> None:
        self.inp = inp
        self.fn = fn
        self.parallel = cpus() if parallel == AUTOTUNE else parallel
        self.batched = batched

    def row_source(self) -> RowSource | None:
        rs = self.inp.row_source() if self.batched is not None else None
        if rs is None:
            return None
        return MappedRows(rs[0], self.batched), rs[1]  # type: ignore[arg-type]

    def iterate(self) -> Iterator[Element]:
        fn = self.fn
        if self.parallel <= 1:
            for e in self.inp.iterate():
                yield tuple(fn(e))
            return
        yield from self._parallel()

    def _parallel(self) -> Iterator[Element]:
        # `parallel` workers, results in input order (deterministic).  A Python thread
        # hand-over costs about what one call of a small function does, so a worker takes
        # a run of elements when calls are short (under 100 µs: 16 at a time) and one at
        # a time otherwise, which keeps the read-ahead at `parallel` elements for maps
        # that do real work per element (a map after a batch).
        pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="flowlab-map")
        fn = self.fn
        timing = [0.0, 0]  # seconds spent in calls, calls

        def run(chunk: list[Element]) -> tuple[list[Element], BaseException | None]:
            out: list[Element] = []
            t0 = time.perf_counter()
            try:
                for e in chunk:
                    out.append(tuple(fn(e)))
            except BaseException as exc:  # raised after the elements before it
                return out, exc
            finally:
                timing[0] += time.perf_counter() - t0
                timing[1] += len(out)
            return out, None

        try:
            pending: deque[Any] = deque()
            src = self.inp.iterate()
            done = False
            while True:
                while not done and len(pending) < self.parallel:
                    short = timing[1] >= 4 and timing[0] / timing[1] < _SHORT_CALL_S
                    n = _CHUNK if short else 1
                    chunk = list(itertools.islice(src, n))
                    if len(chunk) < n:
                        done = True
                    if chunk:
                        pending.append(pool.submit(run, chunk))
                if not pending:
                    return
                results, exc = pending.popleft().result()
                yield from results
                if exc is not None:
                    raise exc
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


_CHUNK = 16
_SHORT_CALL_S = 1e-4


class MappedRows:
    """Rows of `rows` with an element-wise map applied: `rows(indices)` gathers the
    rows, then runs the map once on the whole batch."""

    def __init__(self, rows: Any, batched: Fn) -> None:
        self.base, self.batched, self.n = rows, batched, rows.n

    def rows(self, indices: list[int]) -> Element:
        return tuple(self.batched(self.base.rows(indices)))


class Filter(DatasetValue):
    def __init__(self, inp: DatasetValue, predicate: Fn) -> None:
        self.inp = inp
        self.predicate = predicate

    def iterate(self) -> Iterator[Element]:
        for e in self.inp.iterate():
            keep = self.predicate(e)[0]
            if np.shape(keep) != ():
                raise _invalid("Filter predicate `f` must return a scalar bool.")
            if bool(keep):
                yield e


class FlatMap(DatasetValue):
    def __init__(self, inp: DatasetValue, make: Callable[[Element], DatasetValue]) -> None:
        self.inp = inp
        self.make = make

    def iterate(self) -> Iterator[Element]:
        for e in self.inp.iterate():
            yield from self.make(e).iterate()


class Interleave(DatasetValue):
    """TensorFlow's InterleaveDataset: a cycle of `cycle` open datasets, `block`
    elements from each in turn; a finished one's slot takes the next input element."""

    def __init__(self, inp: DatasetValue, make: Callable[[Element], DatasetValue],
                 cycle: int, block: int) -> None:
        if cycle == AUTOTUNE:
            cycle = cpus()
        if cycle <= 0:
            raise _invalid("cycle_length must be greater than zero.")
        if block <= 0:
            raise _invalid("block_length must be greater than zero.")
        self.inp, self.make, self.cycle, self.block = inp, make, cycle, block

    def iterate(self) -> Iterator[Element]:
        src = self.inp.iterate()
        slots: list[Iterator[Element] | None] = [None] * self.cycle
        index = block_index = 0
        end_of_input = False
        open_ = 0
        while not end_of_input or open_ > 0:
            cur = slots[index]
            if cur is not None:
                try:
                    e = next(cur)
                except StopIteration:
                    slots[index] = None
                    open_ -= 1
                    index, block_index = (index + 1) % self.cycle, 0
                    continue
                block_index += 1
                if block_index == self.block:
                    index, block_index = (index + 1) % self.cycle, 0
                yield e
            elif not end_of_input:
                try:
                    arg = next(src)
                except StopIteration:
                    end_of_input = True
                    continue
                slots[index] = self.make(arg).iterate()
                open_ += 1
            else:
                index, block_index = (index + 1) % self.cycle, 0


# --- batching -----------------------------------------------------------------------
def _stack(values: list[Any], component: int) -> Any:
    if any(isinstance(v, (bytes, str)) or getattr(v, "dtype", None) is np.dtype(object)
           for v in values):
        # Strings stay bytes objects (NumPy would make a fixed-width 'S' array of bare
        # bytes scalars, which drops trailing NULs); a string batch is an object array.
        values = [np.asarray(v, dtype=object) for v in values]
    first = np.shape(values[0])
    for v in values[1:]:
        if np.shape(v) != first:
            raise _invalid(
                f"Cannot add tensor to the batch: number of elements does not match. Shapes "
                f"are: [tensor]: {_shape_str(np.shape(v))}, [batch]: {_shape_str(first)}")
    return np.stack(values)


class Batch(DatasetValue):
    def __init__(self, inp: DatasetValue, size: int, drop_remainder: bool) -> None:
        if size <= 0:
            raise _invalid(f"Batch size must be greater than zero, got {size}")
        self.inp, self.size, self.drop = inp, size, drop_remainder

    def iterate(self) -> Iterator[Element]:
        rs = self.inp.row_source() if type(self) is Batch else None
        if rs is not None:
            yield from self._gather(rs[0], row_order(rs))
            return
        buf: list[Element] = []
        for e in self.inp.iterate():
            buf.append(e)
            if len(buf) == self.size:
                yield self._make(buf)
                buf = []
        if buf and not self.drop:
            yield self._make(buf)

    def _gather(self, source: Any, order: Iterator[int]) -> Iterator[Element]:
        while True:
            idx = list(itertools.islice(order, self.size))
            if not idx or (len(idx) < self.size and self.drop):
                return
            yield source.rows(idx)

    def _make(self, buf: list[Element]) -> Element:
        return tuple(_stack([e[i] for e in buf], i) for i in range(len(buf[0])))


class PaddedBatch(Batch):
    """Each component padded to `shapes[i]` (-1: the batch's largest) with
    `values[i]`, then stacked."""

    def __init__(self, inp: DatasetValue, size: int, drop_remainder: bool,
                 shapes: list[tuple[int, ...]], values: list[Any]) -> None:
        super().__init__(inp, size, drop_remainder)
        self.shapes, self.values = shapes, values

    def _make(self, buf: list[Element]) -> Element:
        out = []
        for i, (want, pad) in enumerate(zip(self.shapes, self.values)):
            vals = [np.asarray(e[i]) for e in buf]
            rank = vals[0].ndim
            for v in vals:
                if v.ndim != len(want):
                    raise _invalid(
                        f"All elements in a batch must have the same rank as the padded shape "
                        f"for component{i}: expected rank {len(want)} but got element with "
                        f"rank {v.ndim}")
            shape = []
            for d in range(rank):
                biggest = max(v.shape[d] for v in vals)
                if want[d] >= 0 and biggest > want[d]:
                    raise _invalid(
                        "Attempted to pad to a smaller size than the input element.")
                shape.append(want[d] if want[d] >= 0 else biggest)
            arr = np.full((len(vals), *shape), pad, dtype=vals[0].dtype)
            for j, v in enumerate(vals):
                arr[(j, *(slice(0, n) for n in v.shape))] = v
            out.append(arr)
        return tuple(out)


class Unbatch(DatasetValue):
    def __init__(self, inp: DatasetValue) -> None:
        self.inp = inp

    def iterate(self) -> Iterator[Element]:
        for e in self.inp.iterate():
            sizes = {np.shape(c)[0] if np.ndim(c) else None for c in e}
            if None in sizes or len(sizes) != 1:
                raise _invalid("Input element must have a non-scalar value in each component "
                               "and the same size in the 0th dimension.")
            for j in range(sizes.pop()):
                yield tuple(_row(c, j) for c in e)
