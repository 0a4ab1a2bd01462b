"""Dataset values that change the order or the amount of their input's elements:
shuffle, repeat, take, skip, cache and prefetch (the sources, element-wise
transformations and batching are in flowlab.kernels.dataset_values, with the
`DatasetValue` contract).

Shuffle follows TensorFlow's ShuffleDatasetOp exactly, so a seeded pipeline gives
TensorFlow's order: a Philox4x32-10 generator seeded by (seed, seed2) per pass, one
uint32 word per element (`word % buffered`), a ring buffer in which the chosen slot
is refilled from the slice's oldest slot.  With `reshuffle_each_iteration` each pass
takes new seeds from a generator seeded once by the dataset's (seed, seed2).

A `Prefetch` pass produces on its own thread into a bounded queue; the consumer pulls
from it, and errors cross the queue as values.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Iterator
from typing import Any

from flowlab.kernels.dataset_values import (
    AUTOTUNE,
    DatasetValue,
    Element,
    RowSource,
    _invalid,
    row_order,
)
from flowlab.kernels.philox import PhiloxRandom, SingleSamples


# --- order and amount --------------------------------------------------------------
class Shuffle(DatasetValue):
    def __init__(self, inp: DatasetValue, buffer_size: int, seed: int, seed2: int,
                 reshuffle: bool) -> None:
        if buffer_size <= 0 and buffer_size != AUTOTUNE:
            raise _invalid("buffer_size must be greater than zero.")
        self.inp, self.buffer_size = inp, buffer_size
        if seed == 0 and seed2 == 0:  # TensorFlow's RandomSeeds: fresh ones
            seed = int.from_bytes(os.urandom(8), "little")
            seed2 = int.from_bytes(os.urandom(8), "little")
        self.seeds = (seed, seed2)
        self._lock = threading.Lock()
        self._seeds_rng = SingleSamples(PhiloxRandom(seed, seed2)) if reshuffle else None

    def _pass_seeds(self) -> tuple[int, int]:
        if self._seeds_rng is None:
            return self.seeds
        with self._lock:  # RandomSeedGenerator::GenerateSeeds
            return self._seeds_rng(), self._seeds_rng()

    def iterate(self) -> Iterator[Element]:
        return self._shuffled(self.inp.iterate())

    def row_source(self) -> RowSource | None:
        rs = self.inp.row_source()
        if rs is None:
            return None
        rows, order = rs
        if order is None:  # rows 0..n-1 in order: the same draws, on a list of ints
            return rows, self._shuffled_range(rows.n)
        return rows, self._shuffled(order)  # the same draws over row numbers

    def _shuffled_range(self, n: int) -> Iterator[int]:
        """`_shuffled(iter(range(n)))`, as a tight loop: the ring is a list, the words
        come 4096 at a time from the pass's generator (the same word sequence as
        SingleSamples hands out one by one)."""
        gen = PhiloxRandom(*self._pass_seeds())
        size = self.buffer_size
        ring = list(range(min(size, n)))
        start, stop = 0, len(ring)
        while start < n:
            words = gen.generate(1024).reshape(-1).tolist()
            for w in words:
                if start == n:
                    return
                index = (start + w % (stop - start)) % size
                oldest = start % size
                row = ring[index]
                ring[index] = ring[oldest]
                start += 1
                if stop < n:
                    ring[stop % size] = stop
                    stop += 1
                yield row

    def _shuffled(self, src: Iterator[Any]) -> Iterator[Any]:
        # Words come from large blocks (one NumPy call per 4096 draws): the same sequence.
        rng = SingleSamples(PhiloxRandom(*self._pass_seeds()), chunk=1024)
        size = self.buffer_size
        ring: dict[int, Any] = {}
        start = stop = 0
        end = False
        while True:
            while not end and stop - start < size:
                try:
                    ring[stop % size] = next(src)
                except StopIteration:
                    end = True
                    break
                stop += 1
            if stop == start:
                return
            index = (start + rng() % (stop - start)) % size
            oldest = start % size
            e = ring[index]
            ring[index] = ring[oldest]
            del ring[oldest]
            start += 1
            yield e


class Repeat(DatasetValue):
    def __init__(self, inp: DatasetValue, count: int) -> None:
        self.inp, self.count = inp, count

    def iterate(self) -> Iterator[Element]:
        n = 0
        while self.count < 0 or n < self.count:
            produced = False
            for e in self.inp.iterate():
                produced = True
                yield e
            n += 1
            if not produced and self.count < 0:
                return  # an empty input repeated forever is empty (TensorFlow's rule)

    def row_source(self) -> RowSource | None:
        # Each pass over the input is a fresh row source of the same rows (a shuffle
        # draws a new order per pass, as iterate() would); a batch may span passes.
        first = self.inp.row_source()
        if first is None:
            return None
        rows = first[0]

        def order() -> Iterator[int]:
            n, rs = 0, first
            while self.count < 0 or n < self.count:
                if rs is None:
                    rs = self.inp.row_source()
                    assert rs is not None  # the same input, the same kind of pass
                produced = False
                for i in row_order(rs):
                    produced = True
                    yield i
                rs = None
                n += 1
                if not produced and self.count < 0:
                    return

        return rows, order()


class Take(DatasetValue):
    def __init__(self, inp: DatasetValue, count: int) -> None:
        self.inp, self.count = inp, count

    def iterate(self) -> Iterator[Element]:
        if self.count < 0:
            yield from self.inp.iterate()
            return
        if self.count == 0:
            return
        for i, e in enumerate(self.inp.iterate(), 1):
            yield e
            if i == self.count:
                return

    def row_source(self) -> RowSource | None:
        rs = self.inp.row_source()
        if rs is None or self.count < 0:
            return rs
        return rs[0], itertools.islice(row_order(rs), self.count)


class Skip(DatasetValue):
    def __init__(self, inp: DatasetValue, count: int) -> None:
        self.inp, self.count = inp, count

    def iterate(self) -> Iterator[Element]:
        it = self.inp.iterate()
        if self.count < 0:
            for _ in it:
                pass
            return
        for i, e in enumerate(it):
            if i >= self.count:
                yield e

    def row_source(self) -> RowSource | None:
        rs = self.inp.row_source()
        if rs is None:
            return None
        if self.count < 0:
            return rs[0], iter(())
        return rs[0], itertools.islice(row_order(rs), self.count, None)


class Cache(DatasetValue):
    """The first complete pass is kept in memory; later passes replay it.  A pass
    that stops early keeps nothing (as TensorFlow's MemoryCache)."""

    def __init__(self, inp: DatasetValue) -> None:
        self.inp = inp
        self._lock = threading.Lock()
        self._cached: list[Element] | None = None

    def iterate(self) -> Iterator[Element]:
        with self._lock:
            cached = self._cached
        if cached is not None:
            yield from cached
            return
        seen: list[Element] = []
        for e in self.inp.iterate():
            seen.append(e)
            yield e
        with self._lock:
            if self._cached is None:
                self._cached = seen


_END = object()


class Prefetch(DatasetValue):
    """A producer thread runs ahead of the consumer by up to `buffer_size` elements
    (AUTOTUNE: 2).  The thread stops when the pass is closed or garbage collected."""

    def __init__(self, inp: DatasetValue, buffer_size: int) -> None:
        if buffer_size < 0 and buffer_size != AUTOTUNE:
            raise _invalid("buffer_size must be >= 0 or set to -1 (AUTOTUNE).")
        self.inp = inp
        self.buffer_size = 2 if buffer_size == AUTOTUNE else buffer_size

    def iterate(self) -> Iterator[Element]:
        if self.buffer_size == 0:
            return self.inp.iterate()
        return _PrefetchPass(self.inp.iterate(), self.buffer_size)


class _PrefetchPass:
    def __init__(self, src: Iterator[Element], size: int) -> None:
        self._q: queue.Queue[Any] = queue.Queue(size)
        self._stop = threading.Event()
        self._finished = False
        t = threading.Thread(target=self._produce, args=(src, self._q, self._stop),
                             name="flowlab-prefetch", daemon=True)
        t.start()

    @staticmethod
    def _produce(src: Iterator[Element], q: queue.Queue[Any], stop: threading.Event) -> None:
        def put(item: Any) -> bool:
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            for e in src:
                if not put((e, None)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put((None, exc))
            return
        put((_END, None))

    def __iter__(self) -> _PrefetchPass:
        return self

    def __next__(self) -> Element:
        if self._finished:
            raise StopIteration
        e, exc = self._q.get()
        if exc is not None:
            self._finished = True
            raise exc
        if e is _END:
            self._finished = True
            raise StopIteration
        return e  # type: ignore[no-any-return]

    def close(self) -> None:
        self._stop.set()

    def __del__(self) -> None:
        self._stop.set()
