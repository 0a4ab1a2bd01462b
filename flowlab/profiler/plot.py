"""A matplotlib Gantt chart of a trace.

One band per device (top to bottom in `trace.devices` order), one lane per executor
thread inside it; each op is a bar colored by op type (the same type always gets
the same color within a figure), waiting ops (`_Recv`, queue waits) are thin and
pale, dead ops are hatched ticks, and each Send->Recv pair is an arrow from
the Send to the end of its Recv.  Below, optionally, each device's memory in use.
The figure is built without pyplot (no global state, any backend).  A Figure made
that way is drawn by a notebook only when pyplot's inline backend happens to be set up
(`<Figure size 1100x380 with 2 Axes>` otherwise), so the figure `plot_trace` makes is a
`GanttFigure`: it draws itself as PNG as a cell's value, whatever the backend.
"""

from __future__ import annotations

import functools
from typing import Any

from flowlab.profiler.trace import Trace, plural

__all__ = ["plot_trace"]


@functools.cache
def _figure_class() -> type:
    """The `GanttFigure` class (made on first use: matplotlib is imported only when a
    figure is wanted)."""
    from matplotlib.figure import Figure

    class GanttFigure(Figure):
        """A matplotlib Figure that displays itself in a notebook (`_repr_png_`)."""

        def _print(self, fmt: str) -> bytes:
            import io

            buf = io.BytesIO()
            self.savefig(buf, format=fmt, dpi=100, bbox_inches="tight")
            return buf.getvalue()

        def _repr_png_(self) -> bytes:
            return self._print("png")

    return GanttFigure


def _colors(trace: Trace, cmap: Any) -> dict[str, Any]:
    """A distinct color per op type (20 of them; beyond, colors repeat), by name order
    so that the same trace always gets the same colors."""
    kinds = sorted({r.op_type for r in trace.ops})
    return {k: cmap(i % 20) for i, k in enumerate(kinds)}


def plot_trace(trace: Trace, ax: Any = None, memory: bool = True, legend: int = 12,
               figsize: tuple[float, float] | None = None) -> Any:
    """Draw `trace`; returns the matplotlib Figure (a `GanttFigure`, which shows
    itself as a cell's value: write `trace.plot()`, or `display(trace.plot())`).

    Args:
      ax: an Axes to draw the Gantt chart into (then no memory panel is added).
      memory: add a panel with each device's bytes in use.
      legend: show the op types with the most time, at most this many.
      figsize: size of a new figure (inches).
    """
    from matplotlib import colormaps
    from matplotlib.patches import Patch

    cmap = colormaps["tab20"]
    color = _colors(trace, cmap)
    waiting = {id(r) for r in trace.queue_waits} | {
        id(r) for r in trace.ops if r.op_type in ("_Recv", "_HostRecv")}
    lanes: list[tuple[str, int]] = [(d, th) for d in trace.devices for th in trace.threads(d)]
    want_memory = memory and ax is None and any(trace.memory.values())
    if ax is None:
        # Tall enough for the lanes and for the legend beside them (one entry per op
        # type shown, and the Send -> Recv entry).
        entries = min(legend, len({r.op_type for r in trace.ops if not r.dead})) + bool(trace.transfers)
        gantt_h = max(0.5 * max(1, len(lanes)), 0.22 * entries)
        h = figsize or (9.5, 1.2 + gantt_h + (1.6 if want_memory else 0.0))
        fig = _figure_class()(figsize=h, layout="constrained")
        if want_memory:
            ax, max_ = fig.subplots(2, 1, sharex=True,
                                    gridspec_kw={"height_ratios": [max(2, len(lanes)), 1.5]})
        else:
            ax, max_ = fig.add_subplot(1, 1, 1), None
    else:
        fig, max_ = ax.figure, None
    t0 = trace.start_us
    row = {lane: i for i, lane in enumerate(lanes)}
    time_by_type: dict[str, float] = {}
    for r in trace.ops:
        y = row[(r.device, r.thread)]
        if r.dead:
            ax.broken_barh([(r.start_us - t0, max(r.duration_us, 0.5))], (y - 0.4, 0.8),
                           facecolors="none", edgecolors="grey", hatch="///", linewidth=0.5)
            continue
        if id(r) in waiting:  # a Recv or queue op waiting: light, so work stands out
            ax.broken_barh([(r.start_us - t0, max(r.duration_us, 0.5))], (y - 0.25, 0.5),
                           facecolors=color[r.op_type], alpha=0.3, edgecolors="none")
        else:
            ax.broken_barh([(r.start_us - t0, max(r.duration_us, 0.5))], (y - 0.4, 0.8),
                           facecolors=color[r.op_type], edgecolors="black", linewidth=0.3)
        time_by_type[r.op_type] = time_by_type.get(r.op_type, 0.0) + r.duration_us
    for t in trace.transfers:
        if t.send is None or t.recv is None:
            continue
        ax.annotate(
            "", xy=(t.recv.end_us - t0, row[(t.recv.device, t.recv.thread)]),
            xytext=(t.send.start_us + t.send.duration_us / 2 - t0,
                    row[(t.send.device, t.send.thread)]),
            arrowprops={"arrowstyle": "->", "color": "crimson", "lw": 1.0},
        )
    labels = []
    for d, th in lanes:
        dev = d.rsplit("/device:", 1)[-1]
        n = len(trace.threads(d))
        labels.append(dev if n == 1 else f"{dev} t{trace.threads(d).index(th)}")
    ax.set_yticks(range(len(lanes)), labels)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlim(0, max(trace.duration_us, 1.0) * 1.01)
    ax.set_title(f"{plural(len(trace.steps), 'step')}, {plural(len(trace.ops), 'op')}, "
                 f"{plural(len(trace.transfers), 'transfer')} ({trace.bytes_moved:,} B)")
    kinds = sorted(time_by_type, key=lambda k: -time_by_type[k])[:legend]
    handles = [Patch(facecolor=color[k], edgecolor="black", label=k) for k in kinds]
    if trace.transfers:
        handles.append(Patch(facecolor="crimson", label="Send -> Recv"))
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    if max_ is not None:
        for dev, samples in trace.memory.items():
            xs = [s.time_us - t0 for s in samples]
            ys = [s.bytes for s in samples]
            max_.step(xs, ys, where="post", label=dev.rsplit("/device:", 1)[-1])
        max_.set_ylabel("bytes in use")
        max_.set_xlabel("time (us from the first op)")
        max_.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        ax.set_xlabel("time (us from the first op)")
    return fig
