"""Per-step state shared by the kernels of one `Session.run`.

A `Step` is created for each run and dropped at its end.  It carries the step id,
the undo log of variable writes (so a failed step restores the variables it changed),
the cancellation manager (asynchronous kernels register callbacks that unblock them),
the deadline, and the variable updates deferred to the step's end (written only when
every op has succeeded, flowlab.runtime.task.deferred_updates).  Kernels that declare
`step=True` receive it.

A failed step writes nothing -- also with concurrent steps.  The rule, precisely:

1. While a step runs, its variable writes are visible to other steps at once (no
   isolation: Hogwild!, as TensorFlow).  A concurrent reader of a failed step's
   write sees it from the write until the failed step's rollback, and then no more.
2. When a step fails, `rollback` undoes its writes, newest first, each under the
   variable's lock:
   a. the variable still holds the value this step wrote: the old value goes back
      (exactly as if the write had never happened);
   b. another step has written the variable since, and this step's write was an
      *increment* (AssignAdd, AssignSub, ScatterAdd, ScatterSub, ScatterNdAdd,
      ScatterNdSub, CountUpTo: new = old + delta) and no *overwrite* of the variable has
      happened since: the delta is taken back from the current value.  So the
      increments of steps that read the failed value and added to it stay, and the
      failed step's does not: the variable ends as the sum of the successful steps'
      increments (exactly for integers; for floats up to rounding);
   c. otherwise (this write was an overwrite -- Assign, ScatterUpdate, an optimizer's
      apply -- or an overwrite came after it) the later write superseded it and stays.
3. What another step *derived* from a failed value and stored elsewhere (an Assign
   to another variable, a fetched result) keeps what it saw: rollback undoes the
   failed step's writes, not other steps' reads.

Increments are exact against one another when they are atomic (`use_locking=True`,
whose kernels and rollback both hold the variable's lock); unlocked concurrent
updates may lose each other, with or without a rollback, as with TensorFlow.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.kernels.resources import INCREMENT_DIFF

# From a random start: tasks shared by several clients (a cluster's) key their
# rendezvous tables by step id, so two processes' ids must not meet.
_step_ids = itertools.count(secrets.randbits(52) << 8 | 1)


def next_step_id() -> int:
    """A step id unused in this process, and (by its random start) by any other
    process's master (the master names its steps with these)."""
    return next(_step_ids)

DIFF = INCREMENT_DIFF  # an increment whose delta is new - old (a scatter's)


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

    def __init__(self, session: Any = None, deadline: float | None = None, step_id: int | None = None) -> None:
        # The master names a step (every task of the step sees the same id); a Step
        # made without one (the Stepper's) takes the next id of this process.
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.undo: list[tuple[Any, Any, Any, Any, int]] = []
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

    def write_var(self, var: Any, new_value: Any, increment: Any = None) -> None:
        """Store `new_value` in a VariableState, remembering the old one for rollback.
        `increment`: None for an overwrite; `(delta, sign)` for new = old + sign*delta;
        `DIFF` for an increment whose delta is new - old.  The caller holds
        `var.lock` when the update must be atomic."""
        if increment is None:
            var.overwrites += 1
        self.undo.append((var, var.value, new_value, increment, var.overwrites))
        var.value = new_value

    def has_writes(self) -> bool:
        """Whether the step wrote a variable (something `rollback` would undo)."""
        return bool(self.undo)

    def rollback(self) -> None:
        """Undo this step's variable writes, newest first, by the rule of the module
        docstring: restore what is still ours, take back our increments from what
        others added since, leave what a later overwrite superseded."""
        undo, self.undo = self.undo, []
        for var, old, new, increment, overwrites in reversed(undo):
            with var.lock:
                current = var.value
                if current is new:
                    var.value = old
                elif increment is not None and var.overwrites == overwrites and current is not None:
                    back = _taken_back(current, old, new, increment)
                    if back is not None:
                        var.value = back

    def get_cancellation(self) -> CancellationManager:
        if self.cancellation is None:
            self.cancellation = CancellationManager()
        return self.cancellation


def _taken_back(current: Any, old: Any, new: Any, increment: Any) -> Any:
    """`current` without the increment that took `old` to `new` (None: cannot)."""
    try:
        if increment is DIFF:
            delta = new - old
            back = current - delta
        else:
            delta, sign = increment
            back = current - delta if sign > 0 else current + delta
        if getattr(back, "shape", None) != getattr(current, "shape", None):
            return None
        if hasattr(back, "astype") and back.dtype != current.dtype:
            back = back.astype(current.dtype)
    except (TypeError, ValueError):
        return None
    if type(back) is np.ndarray:
        if back.ndim == 0:
            return back[()]
        back.flags.writeable = False
    return back
