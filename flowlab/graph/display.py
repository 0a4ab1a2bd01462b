"""Notebook display of the objects of the lower layers (Graph, Placement, Partitions),
drawn by a higher one.

State: one drawing function, `None` until `flowlab.viz` registers its `mimebundle`
when it is imported (the package `flowlab` imports it).  The layer contract forbids
`flowlab.graph` and `flowlab.runtime` to import `flowlab.viz`, so their objects' rich
display goes through this module instead: `_repr_mimebundle_` returns
`mimebundle(self, ...)`, which is the text repr alone while no drawer is registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["mimebundle", "register_drawer"]

Drawer = Callable[..., dict[str, str]]
_drawer: Drawer | None = None


def register_drawer(draw: Drawer) -> None:
    """Make `draw(obj, include, exclude)` the notebook display of graph-level objects."""
    global _drawer
    _drawer = draw


def mimebundle(obj: Any, include: Any = None, exclude: Any = None) -> dict[str, str]:
    """What `obj._repr_mimebundle_` returns: the registered drawer's bundle, else the
    text repr."""
    if _drawer is None:
        return {"text/plain": repr(obj)}
    return _drawer(obj, include, exclude)
