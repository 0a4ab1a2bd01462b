"""`fl.show(obj)`: the best view of an object the front end can show.

With flowlab's JupyterLab extension installed (its Python side is the module
`flowlab.viz.widgets`, whose `available()` says whether the front end is there too),
`show` displays the live widget for the object; otherwise it displays the static SVG
picture of `flowlab.viz.graph(obj)`.  The extension is looked for, never required:
without it, or outside a notebook, nothing fails.

Outside IPython there is nothing to display into: `show` then returns the graphviz
Digraph (render it with `.render(...)`, or read `.source`).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import graphviz

WIDGETS_MODULE = "flowlab.viz.widgets"


def extension_available() -> bool:
    """Whether flowlab's JupyterLab extension (widget views) can be used here."""
    try:
        if importlib.util.find_spec(WIDGETS_MODULE) is None:
            return False
        mod = importlib.import_module(WIDGETS_MODULE)
    except ImportError:
        return False
    available = getattr(mod, "available", None)
    try:
        return bool(available()) if callable(available) else False
    except Exception:  # noqa: BLE001 - a broken front end means: use the SVG
        return False


def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def show(obj: Any, **kwargs: Any) -> Any:
    """Show `obj` (a Graph, GraphDef, Placement, partitions, Trace, Stepper, ...).

    Args:
      obj: anything `flowlab.viz.graph` draws, a graphviz Digraph, or the `Passes` of
        `flowlab.viz.passes`.
      **kwargs: drawing options of `flowlab.viz.graph` (trace=, collapse_above=,
        expand=, ...), or of the widget when the extension is used.

    Returns:
      None in a notebook (the view is displayed); outside IPython, the graphviz
      Digraph of the picture.
    """
    from flowlab import viz

    ip = _ipython()
    if ip is not None and extension_available():
        widgets = importlib.import_module(WIDGETS_MODULE)
        view = widgets.view(obj, **kwargs)
        from IPython.display import display

        display(view)
        return None
    if isinstance(obj, viz.Passes):  # several pictures: they show side by side themselves
        if ip is None:
            return obj
        from IPython.display import display

        display(obj)
        return None
    picture = obj if isinstance(obj, graphviz.Digraph) else viz.graph(obj, **kwargs)
    if ip is None:
        return picture
    from IPython.display import SVG, display

    svg = viz.svg(picture)
    if svg is None:  # no `dot` binary: show the DOT text rather than nothing
        print("flowlab.show: the graphviz `dot` program is not installed (apt install graphviz); "
              "the picture's DOT source follows.\n")
        print(picture.source)
        return None
    display(SVG(svg))
    return None
