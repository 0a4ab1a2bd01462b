"""The functions `func` attrs name, found by name in this process.

A GraphDef writes a `func` attr as its name only (`{"func": {"name": "fn_3"}}`), as
TensorFlow's NodeDef does; TensorFlow ships the bodies in the GraphDef's function
library.  flowlab's functions (a dataset's `map` function, flowlab.data.function) are
traced graphs with a private session, registered here when traced, so a task that
imports a partition in this process resolves the name back to the same object.
A task in another process cannot: shipping function bodies with a partition is the
distributed runtime's job (flowlab.distributed).

Invariant: entries are weak; a function lives as long as a graph holds it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_lock = threading.Lock()
_functions: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def register_function(fn: Any) -> None:
    """Make `fn` (anything with a unique `name`) findable by `lookup_function`."""
    with _lock:
        _functions[fn.name] = fn


def lookup_function(name: str) -> Any | None:
    """The function registered under `name`, or None (unknown in this process)."""
    return _functions.get(name)
