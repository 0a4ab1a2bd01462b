"""Queue state: the objects behind queue resource handles (paper section 3.1).

A queue holds elements, each a tuple of arrays (one per component, with the queue's
component dtypes and, when declared, shapes).  It lives in a device's resource
manager from its first use until the session is closed, and steps share it.

State, all guarded by `lock`: the stored elements (in an order chosen by the
subclass: FIFO, priority, random), `closed`, `cancel_enqueues`, and two FIFO lists of
parked attempts: enqueue attempts (elements still to insert) and dequeue attempts
(elements collected so far, how many are wanted).  No thread ever waits here: an
attempt that cannot finish at once is parked with its `done` callback, and whichever
call changes the state (an enqueue, a dequeue, a close, a cancellation) runs
`_flush`, which lets the head attempts make progress in arrival order, as
TensorFlow's queues do.  Callbacks run after the lock is released.

Invariants: an attempt finishes exactly once (success, OutOfRange, Cancelled); a
parked attempt is registered with its step's cancellation manager and deregistered
when it finishes; elements collected by a dequeue that fails go back to the front.
A queue closed with elements left serves them; once it cannot serve a dequeue it
fails it with OutOfRangeError; enqueues into a closed queue fail with CancelledError.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.philox import PhiloxRandom, SingleSamples

_ids = itertools.count()


def _shape_str(shape: Any) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class _Attempt:
    __slots__ = ("done", "token", "cancellation", "finished", "items", "n", "allow_small", "collected",
                 "single")

    def __init__(self, done: Callable[..., None]) -> None:
        self.done = done
        self.token: int | None = None
        self.cancellation: Any = None
        self.finished = False
        self.items: deque[tuple[Any, ...]] = deque()  # enqueue: elements left to insert
        self.n = 0  # dequeue: elements wanted
        self.allow_small = False
        self.collected: list[tuple[Any, ...]] = []
        self.single = False  # dequeue: done(components of one element), not done([element])


class QueueState:
    """A bounded queue of tuples; subclasses choose the order of elements."""

    kind = "FIFOQueue"

    def __init__(self, op_name: str, capacity: int, dtypes: list[Any], shapes: list[Any] | None) -> None:
        self.name = f"_{next(_ids)}_{op_name}"
        self.capacity = capacity if capacity >= 0 else 2**63 - 1
        self.dtypes = [np.dtype(d) for d in dtypes]
        self.shapes = shapes or None  # list of tuples (None dims allowed) or None
        # Fully defined shapes are checked by one tuple comparison per component.
        self._fixed = (tuple(self.shapes) if self.shapes and all(
            None not in s for s in self.shapes) else None)
        self.lock = threading.Lock()
        self.closed = False
        self.cancel_enqueues = False
        self._enqueuers: deque[_Attempt] = deque()
        self._dequeuers: deque[_Attempt] = deque()

    # --- storage (subclasses) --------------------------------------------------------
    def _size(self) -> int:
        raise NotImplementedError

    def _put(self, element: tuple[Any, ...]) -> None:
        raise NotImplementedError

    def _take(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def _put_back(self, elements: list[tuple[Any, ...]]) -> None:
        for e in elements:
            self._put(e)

    def _available(self) -> int:
        """Elements a dequeue may take now (RandomShuffleQueue keeps a reserve)."""
        return self._size()

    def _takeable(self) -> int:
        return self._size() if self.closed else self._available()

    def size(self) -> int:
        return self._size()

    # --- validation ----------------------------------------------------------------
    def check_components(self, values: tuple[Any, ...], many: bool) -> None:
        if len(values) != len(self.dtypes):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {len(self.dtypes)} components, got {len(values)}."
            )
        if not self.shapes:
            return
        fixed = self._fixed
        if fixed is not None and not many:
            for v, shape in zip(values, fixed):
                got = v.shape if isinstance(v, (np.ndarray, np.generic)) else np.shape(v)
                if got != shape:
                    break
            else:
                return
        for i, (v, shape) in enumerate(zip(values, self.shapes)):
            got = np.shape(v)[1:] if many else np.shape(v)
            if len(got) != len(shape) or any(d is not None and d != g for d, g in zip(shape, got)):
                what = "Shape mismatch in tuple component"
                raise errors.InvalidArgumentError(
                    None, None, f"{what} {i}. Expected {_shape_str(shape)}, got {_shape_str(got)}"
                )

    # --- attempts ------------------------------------------------------------------
    def enqueue(self, elements: list[tuple[Any, ...]], step: Any, done: Callable[..., None]) -> None:
        """Insert `elements` (in order); `done()` once all are in, or done(error=...)."""
        with self.lock:
            if self.closed:
                err: Any = errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")
                fast = False
            else:
                err = None
                fast = not self._enqueuers and self._size() + len(elements) <= self.capacity
                if fast:
                    for e in elements:
                        self._put(e)
            wake = fast and bool(self._dequeuers)
        if err is not None:
            done(error=err)
            return
        if fast:
            if wake:
                self._flush()
            done(None)
            return
        a = _Attempt(done)
        a.items.extend(elements)
        self._park(a, self._enqueuers, step)

    def dequeue(self, n: int, allow_small: bool, step: Any, done: Callable[..., None],
                single: bool = False) -> None:
        """Take `n` elements; `done(list_of_elements)` or done(error=...).  With
        `single` (n == 1) `done` receives the element's components as a list."""
        with self.lock:
            fast = not self._dequeuers and self._takeable() >= n
            if fast:
                got = [self._take() for _ in range(n)]
            wake = fast and bool(self._enqueuers)
        if fast:
            if wake:
                self._flush()
            done(list(got[0]) if single else got)
            return
        a = _Attempt(done)
        a.single = single
        a.n = n
        a.allow_small = allow_small
        self._park(a, self._dequeuers, step)

    def _park(self, a: _Attempt, waiters: deque[_Attempt], step: Any) -> None:
        cm = step.get_cancellation() if step is not None else None
        if cm is not None:
            a.cancellation = cm
            a.token = cm.register(lambda: self._cancel(a, waiters))
            if a.token is None:
                a.finished = True
                a.done(error=errors.CancelledError(None, None, "The step was cancelled."))
                return
        with self.lock:
            if a.finished:  # cancelled between registering and parking
                return
            waiters.append(a)
        self._flush()

    def _cancel(self, a: _Attempt, waiters: deque[_Attempt]) -> None:
        with self.lock:
            if a.finished:
                return
            a.finished = True
            try:
                waiters.remove(a)
            except ValueError:
                pass
            if a.collected:
                self._put_back(a.collected)
                a.collected = []
        a.done(error=errors.CancelledError(None, None, f"Dequeue/enqueue on {self.kind} '{self.name}' was cancelled."))
        self._flush()

    def close(self, cancel_pending_enqueues: bool) -> None:
        with self.lock:
            self.closed = True
            if cancel_pending_enqueues:
                self.cancel_enqueues = True
        self._flush()

    def _flush(self) -> None:
        """Let the head attempts progress until none can; then run their callbacks."""
        finished: list[tuple[_Attempt, Any, Any]] = []
        with self.lock:
            progress = True
            while progress:
                progress = False
                if self._enqueuers:
                    a = self._enqueuers[0]
                    if self.cancel_enqueues:
                        self._enqueuers.popleft()
                        finished.append((a, None, errors.CancelledError(
                            None, None, f"{self.kind} '{self.name}' is closed.")))
                        progress = True
                    else:
                        while a.items and self._size() < self.capacity:
                            self._put(a.items.popleft())
                            progress = True
                        if not a.items:
                            self._enqueuers.popleft()
                            finished.append((a, None, None))
                            progress = True
                if self._dequeuers:
                    a = self._dequeuers[0]
                    avail = self._takeable()
                    while len(a.collected) < a.n and avail > 0:
                        a.collected.append(self._take())
                        avail -= 1
                        progress = True
                    if len(a.collected) == a.n:
                        self._dequeuers.popleft()
                        finished.append((a, list(a.collected[0]) if a.single else a.collected, None))
                        progress = True
                    elif self.closed and not (self._enqueuers and not self.cancel_enqueues):
                        self._dequeuers.popleft()
                        if a.allow_small and a.collected:
                            finished.append((a, a.collected, None))
                        else:
                            current = len(a.collected) + self._size()
                            self._put_back(a.collected)
                            finished.append((a, None, errors.OutOfRangeError(
                                None, None,
                                f"{self.kind} '{self.name}' is closed and has insufficient elements "
                                f"(requested {a.n}, current size {current})")))
                        progress = True
            for a, _, _ in finished:
                a.finished = True
        for a, value, err in finished:
            if a.cancellation is not None:
                a.cancellation.deregister(a.token)
            if err is not None:
                a.done(error=err)
            else:
                a.done(value)


class FIFOState(QueueState):
    kind = "FIFOQueue"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._items: deque[tuple[Any, ...]] = deque()

    def _size(self) -> int:
        return len(self._items)

    def _put(self, element: tuple[Any, ...]) -> None:
        self._items.append(element)

    def _take(self) -> tuple[Any, ...]:
        return self._items.popleft()

    def _put_back(self, elements: list[tuple[Any, ...]]) -> None:
        self._items.extendleft(reversed(elements))

    # The hot path (one element in, one out, nobody waiting) without the general
    # bookkeeping; anything else takes QueueState's path.
    def enqueue(self, elements: list[tuple[Any, ...]], step: Any, done: Callable[..., None]) -> None:
        if len(elements) == 1:
            with self.lock:
                ok = not self.closed and not self._enqueuers and len(self._items) < self.capacity
                if ok:
                    self._items.append(elements[0])
                    wake = bool(self._dequeuers)
            if ok:
                if wake:
                    self._flush()
                done(None)
                return
        QueueState.enqueue(self, elements, step, done)

    def dequeue(self, n: int, allow_small: bool, step: Any, done: Callable[..., None],
                single: bool = False) -> None:
        if single:
            with self.lock:
                items = self._items
                ok = bool(items) and not self._dequeuers
                if ok:
                    element = items.popleft()
                    wake = bool(self._enqueuers)
            if ok:
                if wake:
                    self._flush()
                done(list(element))
                return
        QueueState.dequeue(self, n, allow_small, step, done, single)


class PaddingFIFOState(FIFOState):
    kind = "PaddingFIFOQueue"


class PriorityState(QueueState):
    """Smallest int64 priority (component 0) first; ties in insertion order."""

    kind = "PriorityQueue"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._heap: list[tuple[int, int, tuple[Any, ...]]] = []
        self._seq = itertools.count()

    def _size(self) -> int:
        return len(self._heap)

    def _put(self, element: tuple[Any, ...]) -> None:
        heapq.heappush(self._heap, (int(element[0]), next(self._seq), element))

    def _take(self) -> tuple[Any, ...]:
        return heapq.heappop(self._heap)[2]


class RandomShuffleState(QueueState):
    """Dequeues a uniformly random element; keeps `min_after_dequeue` elements back
    until the queue is closed, so that samples mix."""

    kind = "RandomShuffleQueue"

    def __init__(self, op_name: str, capacity: int, dtypes: list[Any], shapes: Any,
                 min_after_dequeue: int, seed: int, seed2: int) -> None:
        super().__init__(op_name, capacity, dtypes, shapes)
        self.min_after_dequeue = min_after_dequeue
        self._items: list[tuple[Any, ...]] = []
        if seed == 0 and seed2 == 0:  # both unset: fresh seeds, as TensorFlow draws
            seed, seed2 = (int(w) for w in np.random.default_rng().integers(1, 2**63, size=2))
        # TensorFlow's generator: one uint32 of Philox(seed, seed2) per dequeued element,
        # taken modulo the queue's size, so a seeded queue yields TensorFlow's order.
        self._rng = SingleSamples(PhiloxRandom(seed, seed2))

    def _size(self) -> int:
        return len(self._items)

    def _available(self) -> int:
        return max(0, len(self._items) - self.min_after_dequeue)

    def _put(self, element: tuple[Any, ...]) -> None:
        self._items.append(element)

    def _take(self) -> tuple[Any, ...]:
        items = self._items
        i = self._rng() % len(items)
        items[i], items[-1] = items[-1], items[i]
        return items.pop()
