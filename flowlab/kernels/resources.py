"""State that outlives a step: the per-device resource manager and variable storage.

A `ResourceManager` maps (container, name) to a resource (a `VariableState`, a queue,
an accumulator).  Resources persist across steps until the session is closed or
reset.  A `VariableState` holds one variable's current array.

Writes never mutate the stored array: an update stores a new array.  That makes a
read a stable snapshot without a copy, and lets a failed step restore what it
changed from its undo log (`Step.write_var`), so a failed step leaves variables
as they were.  Stored arrays are read-only so that no kernel can alias and mutate
them by accident.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors

# `Step.write_var`'s mark of an increment whose delta is new - old (a scatter add's),
# which rollback may take back from a value other steps have added to since.
INCREMENT_DIFF = ("new - old",)


class VariableState:
    """The storage behind one variable (a `Ref(T)` tensor's value at run time)."""

    # `overwrites` counts the writes that were not increments (Step.rollback's rule).
    __slots__ = ("name", "dtype", "shape", "value", "lock", "overwrites", "__weakref__")

    def __init__(self, name: str, dtype: Any, shape: tuple[int | None, ...] | None) -> None:
        self.name = name
        self.dtype = dtype  # numpy dtype
        self.shape = shape  # the declared (partial) shape
        self.value: Any = None
        self.lock = threading.Lock()
        self.overwrites = 0

    def read(self) -> Any:
        v = self.value
        if v is None:
            raise errors.FailedPreconditionError(
                None, None,
                f"Attempting to use uninitialized value {self.name}. Run its initializer "
                "first (e.g. sess.run(tf.global_variables_initializer())).",
            )
        return v

    @property
    def is_initialized(self) -> bool:
        return self.value is not None

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={np.shape(self.value)}"
        return f"<VariableState {self.name} {state}>"


def freeze(value: Any) -> Any:
    """Make an array read-only before it is stored (numpy scalars already are)."""
    if type(value) is np.ndarray:
        if value.flags.writeable:
            value.flags.writeable = False
    return value


# Bumped whenever any resource is removed: the straight-line function of a step keeps
# the VariableStates its VariableV2 ops returned while this number is unchanged
# (flowlab.runtime.task.straight_line), instead of looking each up every step.
GENERATION = [0]


class ResourceManager:
    """Resources of one device, by (container, name)."""

    def __init__(self, device_name: str) -> None:
        self.device_name = device_name
        self._lock = threading.Lock()
        self._resources: dict[tuple[str, str], Any] = {}

    def lookup_or_create(self, container: str, name: str, create: Callable[[], Any]) -> Any:
        key = (container, name)
        r = self._resources.get(key)
        if r is None:
            with self._lock:
                r = self._resources.get(key)
                if r is None:
                    r = self._resources[key] = create()
        return r

    def get(self, container: str, name: str) -> Any:
        """The resource, or None (no lock: dict reads are atomic)."""
        return self._resources.get((container, name))

    def lookup(self, container: str, name: str) -> Any:
        try:
            return self._resources[(container, name)]
        except KeyError:
            raise errors.NotFoundError(
                None, None, f"Resource {container}/{name} does not exist on {self.device_name}."
            ) from None

    def items(self) -> list[tuple[tuple[str, str], Any]]:
        with self._lock:
            return list(self._resources.items())

    def clear(self, container: str | None = None) -> None:
        GENERATION[0] += 1  # a straight-line step's held handles are stale now
        with self._lock:
            if container is None:
                self._resources.clear()
            else:
                for k in [k for k in self._resources if k[0] == container]:
                    del self._resources[k]
