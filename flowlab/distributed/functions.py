"""Function bodies shipped with a registration, so that a task in another process can
run the functions its partitions call (a dataset's `map`, `filter`, `flat_map` or
`interleave` function).

A GraphDef names a function by its `func` attr only; in one process the task finds
the traced function object by that name (flowlab.graph.function_registry).  A task
server has never seen the client's objects, so the client adds the bodies to the
`register_partitions` message (`library`): each function the units call, and each
one those call in turn, dependencies first, as the function describes itself
(`to_message()`: for a dataset function its graph as a GraphDef, the names of its
argument placeholders, outputs and captures, and which attrs of its ops are
functions).  The task rebuilds them in that order (`install`, through the builder
the function's kind registered) and registers each under its name before the units
are imported.  Everything travels as plain data: no code, nothing pickled.

A name is unique in its client's process but not across clients (two scripts both
trace `lambda_1`).  A function's own calls resolve within its library, never through
the registry, and the imported ops hold the objects they call, so a later
registration reusing a name never changes a registered step; `install` and the
import after it run under one lock per task.
"""

from __future__ import annotations

from typing import Any

from flowlab import errors
from flowlab.graph.function_registry import build_function, lookup_function

__all__ = ["install", "library_for"]


def library_for(units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bodies of every function `units` call, transitively, dependencies first;
    [] when they call none."""
    wanted: list[Any] = []
    for unit in units:
        calls = unit.get("functions") or {}
        for node in unit["graph_def"].get("node", []):
            for key in calls.get(node["name"], ()):
                name = node.get("attr", {}).get(key, {}).get("func", {}).get("name")
                fn = lookup_function(name) if isinstance(name, str) else None
                if fn is None:
                    raise errors.NotFoundError(
                        None, None, f"Node '{node['name']}' calls function '{name}', which this process "
                        "does not define.")
                wanted.append(fn)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(fn: Any) -> None:
        if fn.name in seen:
            return
        seen.add(fn.name)
        message, calls = fn.to_message()
        for inner in calls:
            add(inner)  # first: installed before the function that calls it
        out.append(message)

    for fn in wanted:
        add(fn)
    return out


def install(library: list[dict[str, Any]]) -> list[Any]:
    """Rebuild and register the functions of `library` (from `library_for`), in order;
    returns them (the caller keeps them alive until its units are imported: the
    registry's entries are weak)."""
    built: dict[str, Any] = {}
    for message in library:
        name = str(message.get("name"))

        def resolve(inner: Any, name: str = name) -> Any:
            fn = built.get(inner) if isinstance(inner, str) else None
            if fn is None:
                raise errors.InvalidArgumentError(
                    None, None, f"Function '{name}' calls '{inner}', which the message's library does not "
                    "define before it.")
            return fn

        built[name] = build_function(message, resolve)
    return list(built.values())
