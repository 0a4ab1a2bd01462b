"""The functions `func` attrs name, found by name in this process.

A GraphDef writes a `func` attr as its name only (`{"func": {"name": "fn_3"}}`), as
TensorFlow's NodeDef does; TensorFlow ships the bodies in the GraphDef's function
library.  flowlab's functions (a dataset's `map` function, flowlab.data.function) are
traced graphs with a private session, registered here when traced, so a task that
imports a partition in this process resolves the name back to the same object.
A task in another process cannot: shipping function bodies with a partition is the
distributed runtime's job (flowlab.distributed).

A function's kind (a dataset function, flowlab.data.function) also registers how
to rebuild one of its kind from plain data (`register_builder`): the distributed
runtime ships function bodies as messages and rebuilds them with `build_function`,
without importing the layers above it.

Invariant: entries are weak; a function lives as long as a graph holds it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
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


# kind -> build(message, resolve): the function a message describes; `resolve(name)`
# gives the functions it calls (built before it).
_builders: dict[str, Callable[[dict[str, Any], Callable[[str], Any]], Any]] = {}


def register_builder(kind: str, build: Callable[[dict[str, Any], Callable[[str], Any]], Any]) -> None:
    """How to rebuild a function of `kind` from its message (its `to_message()`)."""
    _builders[kind] = build


def build_function(message: dict[str, Any], resolve: Callable[[str], Any]) -> Any:
    """The function `message` describes, registered under its name; ValueError for a
    kind no module of this process registered."""
    kind = message.get("kind")
    build = _builders.get(kind) if isinstance(kind, str) else None
    if build is None:
        raise ValueError(f"Function '{message.get('name')}' is of kind {kind!r}, which this process cannot "
                         f"build (known: {sorted(_builders)}).")
    return build(message, resolve)
