"""Per-step state shared by the kernels of one `Session.run`.

A `Step` is created for each run and dropped at its end.  It carries the step id,
the undo log of variable writes (so a failed step restores the variables it changed),
the cancellation manager (asynchronous kernels register callbacks that unblock them),
the deadline, and the variable updates deferred to the step's end (written only when
every op has succeeded, flowlab.runtime.deferred_updates).  Kernels that declare
`step=True` receive it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

_step_ids = itertools.count(1)


class CancellationManager:
    """Callbacks to run once when the step is cancelled (error, timeout, close)."""

    __slots__ = ("_lock", "_callbacks", "cancelled", "reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self.cancelled = False
        self.reason: BaseException | None = None

    def register(self, callback: Callable[[], None]) -> int | None:
        """Register `callback`; returns a token, or None (and calls nothing) if the
        step is already cancelled, in which case the caller must give up at once."""
        with self._lock:
            if self.cancelled:
                return None
            token = id(callback) ^ len(self._callbacks)
            while token in self._callbacks:
                token += 1
            self._callbacks[token] = callback
            return token

    def deregister(self, token: int | None) -> None:
        if token is None:
            return
        with self._lock:
            self._callbacks.pop(token, None)

    def cancel(self, reason: BaseException | None = None) -> None:
        with self._lock:
            if self.cancelled:
                return
            self.cancelled = True
            self.reason = reason
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for cb in callbacks:
            try:
                cb()
            except Exception:  # a callback's failure must not hide the step's error
                pass


class Step:
    """The state of one running step."""

    # __weakref__: the session keeps the steps a Stepper drives in a WeakSet, so that
    # close() cancels them without keeping a finished step (and its undo log) alive.
    __slots__ = ("step_id", "undo", "cancellation", "deadline", "session", "rendezvous", "deferred",
                 "__weakref__")

    def __init__(self, session: Any = None, deadline: float | None = None) -> None:
        self.step_id = next(_step_ids)
        self.undo: list[tuple[Any, Any, Any]] = []
        self.cancellation: CancellationManager | None = None
        self.deadline = deadline
        self.session = session
        self.rendezvous: Any = None
        self.deferred: list[Any] | None = None  # variable updates run at the end

    def defer(self, update: Any) -> None:
        """Run `update` when the step's ops have all succeeded (flowlab.runtime.
        deferred_updates): `update.states` are the variables it writes,
        `update.prepare(self)` returns the closure that writes."""
        if self.deferred is None:
            self.deferred = [update]
        else:
            self.deferred.append(update)

    def commit(self) -> None:
        """Run the deferred updates: first every `prepare` (which checks, allocates and
        may fail, writing nothing), then every write (which cannot fail).  Two steps
        committing updates of one variable take turns: the updates' variables are
        locked (ordered by id, as every locked update takes them) from the checks to
        the last write, so no write meets another's half-done one."""
        pending, self.deferred = self.deferred, None
        if not pending:
            return
        states = sorted({id(s): s for u in pending for s in u.states}.values(), key=id)
        for s in states:
            s.lock.acquire()
        try:
            writes = [u.prepare(self) for u in pending]
            for write in writes:
                write()
        finally:
            for s in reversed(states):
                s.lock.release()

    def write_var(self, var: Any, new_value: Any) -> None:
        """Store `new_value` in a VariableState, remembering the old one for rollback.
        The caller holds `var.lock` when the update must be atomic."""
        self.undo.append((var, var.value, new_value))
        var.value = new_value

    def rollback(self) -> None:
        """Undo this step's variable writes, newest first.  A write that another step
        has since overwritten is left alone: its value is no longer ours to undo."""
        for var, old, new in reversed(self.undo):
            if var.value is new:
                var.value = old
        self.undo.clear()

    def get_cancellation(self) -> CancellationManager:
        if self.cancellation is None:
            self.cancellation = CancellationManager()
        return self.cancellation
