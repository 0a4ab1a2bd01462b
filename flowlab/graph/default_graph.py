"""The default graph: where ops go when no graph is named.

One global default graph shared by all threads, plus a per-thread stack of
`with g.as_default():` blocks whose innermost graph wins (TensorFlow 1.x
semantics, except that TensorFlow gives each thread its own global graph).  Also
the hook through which `Tensor.eval()` / `Operation.run()` reach a session: the
runtime layer installs it, so this layer does not import upward.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowlab.graph.graph import Graph

_global_default_graph: Graph | None = None
_thread_local = threading.local()


def _default_stack() -> list[Graph]:
    s = getattr(_thread_local, "stack", None)
    if s is None:
        s = _thread_local.stack = []
    return s


def get_default_graph() -> Graph:
    global _global_default_graph
    s = _default_stack()
    if s:
        return s[-1]
    if _global_default_graph is None:
        from flowlab.graph.graph import Graph

        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    """Clear the global default graph (not allowed inside a `with g.as_default()`)."""
    global _global_default_graph
    if _default_stack():
        raise AssertionError(
            "Do not use tf.reset_default_graph() to clear nested graphs. If you need a "
            "cleared graph, exit the nesting and create a new graph."
        )
    from flowlab.graph.graph import Graph

    _global_default_graph = Graph()


def get_name_scope() -> str:
    return get_default_graph().get_name_scope()


# Session.run for Tensor.eval()/Operation.run(), installed by flowlab.runtime.session.
_eval_function: list[Callable[[Any, Any, Any], Any]] = []


def _eval_hook(element: Any, feed_dict: Any, session: Any) -> Any:
    if not _eval_function:
        raise RuntimeError("flowlab.runtime is not loaded; import flowlab first.")
    return _eval_function[0](element, feed_dict, session)
