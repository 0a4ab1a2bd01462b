"""Pictures of graphs and of the runtime's passes, without any front-end extension.

`flowlab.viz.graph(obj)` returns a `graphviz.Digraph` of a Graph, a GraphDef dict, a
Placement, per-device partitions, an optimized GraphDef, a Trace or a Stepper: name
scopes as clusters (collapsed past `collapse_above` ops), nodes colored by device with
a legend, Send/Recv edges bold red (with bytes when a trace is given), control edges
dashed, loop frames boxed.  A Digraph displays itself as SVG in any notebook front end
when the `dot` binary (apt: graphviz) is installed; `svg(obj)` gives the SVG text.

`flowlab.viz.passes(sess, fetches, feed_dict)` shows what a session does with a step:
full graph -> pruned -> optimized -> placed -> partitioned, one picture per stage.

`flowlab.viz.GraphView(sess, fetches, feed_dict)` is the live, clickable view of the
same pictures in JupyterLab (the `flowlab-widgets` extension; `flowlab.viz.widgets`):
pan, zoom, scopes that open, search, the stage switch, a node's details, steps
lighting up while they run, and another device tried for a node (`GraphView.place`).
`flowlab.viz.TimelineView(trace, graph=view)` shows a profiled step as a Gantt chart
linked to a GraphView (`flowlab.viz.timeline`), and `flowlab.viz.StepperView(sess,
fetches, feed_dict)` is `flowlab.debug.Stepper` with buttons, a tensor inspector and the
step's graph (`flowlab.viz.stepper`).  They are imported on first use (they need
ipywidgets).

`flowlab.viz.plot_scalars(logdir)` draws a logdir's scalar summaries with matplotlib
and `.update()` redraws them live while the run trains (flowlab.viz.scalars).

How the pieces fit: `model.to_picture` turns any object into a `Picture` (the one
adapter per kind of object), `dot.to_dot` draws a Picture.  Objects of other layers
join in by defining `_flowlab_picture_()` (see `flowlab.viz.model`), and get notebook
display by delegating `_repr_mimebundle_` to `mimebundle(self, ...)` -- the objects of
`flowlab.graph` and `flowlab.runtime`, which must not import this package, through
`flowlab.graph.display`, where this module registers `mimebundle` when imported.
"""

from __future__ import annotations

import statistics
from typing import Any

import graphviz

from flowlab.graph import display as _display
from flowlab.viz.dot import format_bytes, short_device, to_dot
from flowlab.viz.model import Picture, PNode, to_picture
from flowlab.viz.passes import Passes, passes
from flowlab.viz.scalars import ScalarsPlot, plot_scalars

__all__ = [
    "graph", "svg", "mimebundle", "passes", "Passes", "Picture", "PNode", "to_picture",
    "dot_available", "format_bytes", "short_device", "MAX_AUTO_DISPLAY_OPS",
    "ScalarsPlot", "plot_scalars", "GraphView", "TimelineView", "StepperView",
]


def __getattr__(name: str) -> Any:
    # The widgets (flowlab.viz.widgets, .timeline, .stepper) import ipywidgets: on first use.
    if name == "GraphView":
        from flowlab.viz.widgets import GraphView

        return GraphView
    if name == "TimelineView":
        from flowlab.viz.timeline import TimelineView

        return TimelineView
    if name == "StepperView":
        from flowlab.viz.stepper import StepperView

        return StepperView
    raise AttributeError(f"module 'flowlab.viz' has no attribute {name!r}")

# Rich display of a bigger graph is skipped (text only): dot needs seconds there, and a
# notebook re-renders a repr whenever it is shown.  `fl.show(g)` draws any size.
MAX_AUTO_DISPLAY_OPS = 2000


def graph(
    obj: Any,
    *,
    trace: Any = None,
    graph: Any = None,
    title: str | None = None,
    collapse_above: int = 40,
    expand: Any = (),
    collapse: Any = (),
    rankdir: str = "TB",
    legend: bool = True,
) -> graphviz.Digraph:
    """A picture of `obj` as a graphviz Digraph.

    Args:
      obj: a Graph, a GraphDef dict, a list of Operations, a Placement, partitions
        (device -> GraphDef), an optimization result, a Trace, a Stepper, or a Picture.
      trace: a profiler Trace of a step of `obj`: Send/Recv edges get the bytes moved
        and nodes their run time.
      graph: the Graph a Placement's op names refer to (default: the default graph).
      title: a title above the picture.
      collapse_above: name scopes with more ops are drawn as one node.
      expand, collapse: scope names to always open / always collapse.
      rankdir: "TB" (top to bottom) or "LR".
      legend: draw the device legend.

    Returns:
      A `graphviz.Digraph` (`.source` is the DOT text; it displays as SVG).

    Raises:
      TypeError: `obj` is not something flowlab can draw.
    """
    pic = to_picture(obj, graph=graph, title=title)
    if trace is None and hasattr(obj, "transfers") and hasattr(obj, "ops"):
        trace = obj  # a Trace drawn by itself carries its own facts
    if trace is not None:
        apply_trace(pic, trace)
    return to_dot(pic, collapse_above=collapse_above, expand=expand, collapse=collapse,
                  rankdir=rankdir, legend=legend)


def apply_trace(pic: Picture, trace: Any) -> None:
    """Put a trace's facts on a picture: bytes per transfer (keyed by the Recv's name
    and the tensor name), and each node's median run time over the trace's executions.  A
    transfer's bytes are per step (summed over loop iterations, the largest step).

    Reads `trace.transfers` (records with `bytes`, `tensor_name` and the `recv` op's
    record) and `trace.ops` (records with `name` and `duration_us`)."""
    per_step: dict[tuple[str, Any], int] = {}
    for rec in getattr(trace, "transfers", None) or ():
        nbytes = getattr(rec, "bytes", None)
        if nbytes is None:
            continue
        recv = getattr(rec, "recv", None)
        step = getattr(rec, "step_id", None)
        for key in (getattr(recv, "name", None), getattr(rec, "tensor_name", None)):
            if key:  # summed over a step's loop iterations
                per_step[(str(key), step)] = per_step.get((str(key), step), 0) + int(nbytes)
    for (key, _), nbytes in per_step.items():  # the largest step's figure
        pic.transfer_bytes[key] = max(nbytes, pic.transfer_bytes.get(key, 0))
    times: dict[str, list[float]] = {}
    for rec in getattr(trace, "ops", None) or ():
        if rec.name in pic.by_name and not getattr(rec, "dead", False):
            times.setdefault(rec.name, []).append(float(rec.duration_us))
    for name, ts in times.items():
        pic.by_name[name].note = _us(statistics.median(ts))


def _us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def dot_available() -> bool:
    """Whether the graphviz `dot` binary can be run (it renders SVG)."""
    try:
        graphviz.version()
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError, OSError):
        return False
    return True


def svg(obj: Any, **kwargs: Any) -> str | None:
    """The SVG text of `graph(obj, **kwargs)`, or None when `dot` is not installed."""
    pic = obj if isinstance(obj, graphviz.Digraph) else graph(obj, **kwargs)
    try:
        return pic.pipe(format="svg", encoding="utf-8")
    except (graphviz.ExecutableNotFound, OSError):
        return None


def mimebundle(obj: Any, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, str]:
    """What `obj._repr_mimebundle_` returns: its text repr, plus its SVG picture when
    `dot` is installed and the graph is small enough to draw on every display."""
    bundle = {"text/plain": repr(obj)}
    wanted = (include is None or "image/svg+xml" in include) and not (exclude and "image/svg+xml" in exclude)
    if not wanted:
        return bundle
    try:
        pic = to_picture(obj, **{k: v for k, v in kwargs.items() if k in ("graph", "title")})
    except (TypeError, ValueError):
        return bundle
    if len(pic.nodes) > MAX_AUTO_DISPLAY_OPS or not pic.nodes:
        return bundle
    if hasattr(obj, "transfers") and hasattr(obj, "ops"):
        apply_trace(pic, obj)  # a Trace shows its bytes and times
    out = svg(to_dot(pic))
    if out is not None:
        bundle["image/svg+xml"] = out
        is_trace = hasattr(obj, "transfers") and hasattr(obj, "ops")  # a Trace keeps its own timeline HTML
        if not is_trace and not (exclude and "text/html" in exclude):
            # Fitted to the output's width and zoomable, as `viz.graph()`'s drawings.
            from flowlab.viz.show import zoomable_html

            bundle["text/html"] = zoomable_html(out)
    return bundle

_display.register_drawer(mimebundle)
