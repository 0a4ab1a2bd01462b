"""Scalar curves of a logdir, live while a run trains, in matplotlib (no TensorBoard).

For Binder and any notebook where TensorBoard's server cannot be reached, a
`ScalarsPlot` reads the same event files TensorBoard does and draws one panel per
tag, one line per run (a run is a directory holding event files, as TensorBoard
calls them: `logdir` itself is the run ".", `logdir/train` the run "train"):

    plot = fl.viz.plot_scalars("/tmp/logs")        # draws what is there now
    for step in range(1000):
        ...
        writer.add_summary(sess.run(merged), step)
        if step % 50 == 0:
            plot.update(writer)                   # flushes the writer, reads, redraws

State: per event file a reader that remembers how far it has read
(flowlab.summary.summary_iterator.EventFileReader), so `update()` reads only what
was appended, and the points read so far, `{run: {tag: [(step, value), ...]}}`
(`plot.scalars`).  A step that comes again (a restarted run) replaces the points
from that step on, as TensorBoard purges them.  In a notebook the figure is shown
once and later updates replace it in place (an IPython display handle), so the cell
shows one live figure; elsewhere `plot.figure` is an ordinary matplotlib Figure.
"""

from __future__ import annotations

import glob
import math
import os
from typing import Any

__all__ = ["ScalarsPlot", "plot_scalars"]


def _run_name(logdir: str, directory: str) -> str:
    rel = os.path.relpath(directory, logdir)
    return "." if rel == os.curdir else rel


class ScalarsPlot:
    """One matplotlib figure of every scalar tag under `logdir` (see the module docstring).

    Args:
      logdir: the directory TensorBoard would be given (runs are its subdirectories).
      tags: only these tags (default: all scalar tags found), in this order.
      columns: panels per row.
      display: show the figure in the notebook and update it in place (default:
        when running under IPython).
    """

    def __init__(self, logdir: str, tags: list[str] | None = None, columns: int = 3,
                 display: bool | None = None) -> None:
        self.logdir = str(logdir)
        self.tags = list(tags) if tags is not None else None
        self.columns = max(int(columns), 1)
        self.scalars: dict[str, dict[str, list[tuple[int, float]]]] = {}
        self._readers: dict[str, Any] = {}
        self._handle: Any = None
        self._display = _in_ipython() if display is None else display
        import matplotlib.figure

        self.figure = matplotlib.figure.Figure(figsize=(4 * self.columns, 3))
        self.update()

    def read(self) -> int:
        """Read what was appended to the event files since the last read; returns the
        number of new scalar points."""
        from flowlab.summary.summary_iterator import EventFileReader

        pattern = os.path.join(glob.escape(self.logdir), "**", "*tfevents*")
        new = 0
        for path in sorted(glob.glob(pattern, recursive=True)):
            reader = self._readers.get(path)
            if reader is None:
                reader = self._readers[path] = EventFileReader(path)
            run = self.scalars.setdefault(_run_name(self.logdir, os.path.dirname(path)), {})
            for event in reader.read_new():
                for value in event.summary.value:
                    if value.WhichOneof("value") != "simple_value":
                        continue
                    points = run.setdefault(value.tag, [])
                    while points and points[-1][0] >= event.step:
                        points.pop()  # a restarted run: drop what it overwrote
                    points.append((int(event.step), float(value.simple_value)))
                    new += 1
        return new

    def _tags(self) -> list[str]:
        if self.tags is not None:
            return self.tags
        seen: dict[str, None] = {}
        for run in self.scalars.values():
            for tag in run:
                seen.setdefault(tag)
        return list(seen)

    def draw(self) -> Any:
        """Redraw the figure from the points read so far; returns it."""
        fig = self.figure
        fig.clear()
        tags = self._tags()
        if not tags:
            ax = fig.add_subplot(1, 1, 1)
            ax.text(0.5, 0.5, f"no scalars in {self.logdir} yet", ha="center", va="center")
            ax.set_axis_off()
            return fig
        rows = math.ceil(len(tags) / self.columns)
        cols = min(len(tags), self.columns)
        fig.set_size_inches(4 * cols, 3 * rows)
        for i, tag in enumerate(tags):
            ax = fig.add_subplot(rows, cols, i + 1)
            for run, series in sorted(self.scalars.items()):
                points = series.get(tag)
                if points:
                    ax.plot([s for s, _ in points], [v for _, v in points], label=run)
            ax.set_title(tag)
            ax.set_xlabel("step")
            if len(self.scalars) > 1:
                ax.legend(fontsize="small")
        fig.tight_layout()
        return fig

    def update(self, writer: Any = None) -> ScalarsPlot:
        """Flush `writer` (a FileWriter, optional) so its events are on disk, read the new
        events, redraw, and refresh the notebook's figure."""
        if writer is not None:
            writer.flush()
        self.read()
        self.draw()
        if self._display:
            from IPython.display import display

            if self._handle is None:
                self._handle = display(self.figure, display_id=True)
            else:
                self._handle.update(self.figure)
        return self

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.figure.savefig(buf, format="png")
        return buf.getvalue()


def plot_scalars(logdir: str, tags: list[str] | None = None, columns: int = 3) -> ScalarsPlot:
    """A `ScalarsPlot` of `logdir`, drawn now; call `.update()` to refresh it live."""
    return ScalarsPlot(logdir, tags=tags, columns=columns)


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None
