"""`TimelineView`: a step trace as an interactive Gantt chart in JupyterLab.

The widget's front end is `extension/src/timeline.ts` (the `flowlab-widgets` module).
The kernel turns a profiler `Trace` (`flowlab.profiler`, built from a run's
RunMetadata step_stats or by `fl.profile(sess)`) into one compact JSON model, the
`timeline` trait, which is also what a saved notebook keeps -- so the chart pans,
zooms and shows its tooltips with no kernel at all:

  lanes:  one per (device, executor thread), grouped by device (the trace's order);
  steps:  the steps shown side by side: id, start (µs on the trace's clock), duration,
          and its number in the trace (1, 2, ...); times of its ops are relative to its
          start;
  ops:    `[lane, step, start, duration, name, type, flags, outputs]` rows, names and
          op types as indices into `names` / `types` (a name repeats once per step);
  flows:  `[send row, recv row, bytes, tensor]`: each Send -> Recv pair of the trace,
          drawn as an arrow from the Send's bar to the end of the Recv's wait.

Linked to a `GraphView` (`graph=`): hovering a bar lights its node in the graph, and
clicking one selects the node there (its side panel opens); clicking a node in the
graph marks its bars here.  The link runs in the browser, through events on the
graph's widget model, so it works while the kernel is busy and in a reopened notebook.

Invariant: every row's lane, step, name and type index exists; a flow names two rows.
Every string is data; the front end renders it as text.  `to_chrome(path)` writes the
same steps for Perfetto (`flowlab.profiler.chrome`).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import traitlets

from flowlab.profiler.trace import OpRecord, Trace
from flowlab.viz.dot import PALETTE, short_device
from flowlab.viz.widgets import MODULE, MODULE_VERSION, GraphView

__all__ = ["TimelineView", "timeline_model", "as_trace"]

# Op-type colors (Tableau 10, as the profiler's static timeline uses).
TYPE_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
               "#ff9da7", "#9c755f", "#bab0ac")
# Row flags: the op waited (a Recv, a queue op), was dead, or failed.
WAIT, DEAD, ERROR = 1, 2, 4
# Steps shown side by side at most by default (the last ones of the trace).
MAX_STEPS = 8


def as_trace(obj: Any) -> Trace:
    """A `Trace` of a Trace, a `Profile` (its steps), a RunMetadata or a StepStats.

    Raises:
      TypeError: `obj` is none of these.
    """
    if isinstance(obj, Trace):
        return obj
    if hasattr(obj, "collector") and hasattr(obj, "trace"):  # flowlab.profiler.Profile
        return obj.trace
    if hasattr(obj, "step_stats"):  # RunMetadata
        return Trace.from_run_metadata(obj)
    if hasattr(obj, "dev_stats"):  # StepStats
        return Trace.from_step_stats(obj)
    raise TypeError(
        f"TimelineView needs a trace: a flowlab.profiler.Trace, a Profile, a RunMetadata "
        f"(run with RunOptions(trace_level=FULL_TRACE)) or a StepStats, not {type(obj).__name__}.")


def _outputs_text(r: OpRecord) -> str:
    return "; ".join(f"{o.slot}: {o.dtype} {tuple(o.shape)} {o.bytes} B" for o in r.outputs)


def timeline_model(trace: Trace, steps: Any = None, max_steps: int = MAX_STEPS) -> dict[str, Any]:
    """The JSON model `TimelineView` draws (see the module docstring).

    Args:
      trace: the records.
      steps: the step ids to show, in order (default: the last `max_steps` of the trace).
      max_steps: how many steps at most when `steps` is not given.

    Raises:
      ValueError: a step id the trace does not have.
    """
    all_steps = trace.steps
    if steps is None:
        chosen = all_steps[-max_steps:] if max_steps > 0 else all_steps
    else:
        chosen = list(steps)
        unknown = [s for s in chosen if s not in all_steps]
        if unknown:
            raise ValueError(f"The trace has no step {unknown[0]}; its steps: "
                             f"{', '.join(map(str, all_steps)) or 'none'}.")
    step_index = {s: i for i, s in enumerate(chosen)}
    records = [r for r in trace.ops if r.step_id in step_index]
    devices = [d for d in trace.devices if any(r.device == d for r in records)]
    lanes: list[list[Any]] = []
    lane_of: dict[tuple[str, int], int] = {}
    threads: dict[str, list[int]] = {}
    for r in records:
        threads.setdefault(r.device, [])
        if r.thread not in threads[r.device]:
            threads[r.device].append(r.thread)
    for di, d in enumerate(devices):
        for k, th in enumerate(threads.get(d, ())):
            lane_of[(d, th)] = len(lanes)
            name = trace.thread_names.get(th, f"thread {th}")
            lanes.append([di, f"t{k}" if len(threads[d]) > 1 else "", f"{name} ({th})"])
    starts = {s: min(r.start_us for r in records if r.step_id == s) for s in chosen}
    ends = {s: max(r.end_us for r in records if r.step_id == s) for s in chosen}
    waits = {id(r) for r in trace.queue_waits} | {
        id(r) for r in records if r.op_type in ("_Recv", "_HostRecv")}
    names: dict[str, int] = {}
    types: dict[str, int] = {}
    rows: list[list[Any]] = []
    row_of: dict[int, int] = {}
    for r in records:
        flags = (WAIT if id(r) in waits else 0) | (DEAD if r.dead else 0) | (ERROR if r.error else 0)
        row_of[id(r)] = len(rows)
        rows.append([lane_of[(r.device, r.thread)], step_index[r.step_id],
                     round(r.start_us - starts[r.step_id], 2), round(r.duration_us, 2),
                     names.setdefault(r.name, len(names)), types.setdefault(r.op_type, len(types)),
                     flags, _outputs_text(r)
                     + (f"; frame {r.frame} iteration {r.iteration}" if r.frame else "")
                     + (f"; error: {r.error}" if r.error else "")])
    flows = []
    for t in trace.transfers:
        if t.send is not None and t.recv is not None and id(t.send) in row_of and id(t.recv) in row_of:
            flows.append([row_of[id(t.send)], row_of[id(t.recv)], t.bytes, t.tensor])
    type_names = list(types)
    return {
        "v": 1,
        "devices": [[d, short_device(d, devices), PALETTE[i % len(PALETTE)]]
                    for i, d in enumerate(devices)],
        "lanes": lanes,
        "steps": [[s, round(starts[s], 2), round(ends[s] - starts[s], 2), all_steps.index(s) + 1]
                  for s in chosen],
        "names": list(names),
        "types": type_names,
        "colors": [TYPE_COLORS[i % len(TYPE_COLORS)] for i in range(len(type_names))],
        "ops": rows,
        "flows": flows,
        "all_steps": len(all_steps),
    }


class TimelineView(widgets.DOMWidget):
    """A step trace as a Gantt chart: lanes per device and thread, steps side by side,
    zoom (wheel, or the buttons) and pan (drag), op details on hover, Send/Recv flows
    as arrows; linked both ways with a GraphView.

    Args:
      trace: a profiler Trace, a Profile (`fl.profile(sess)`), a RunMetadata of a
        FULL_TRACE run, or a StepStats.
      graph: a `GraphView` to link with (hover a bar: its node lights; click a bar: the
        node is selected; click a node: its bars are marked).
      steps: the step ids to show side by side (default: the last `max_steps`).
      max_steps: how many of the last steps to show when `steps` is not given.
      height: the chart's height in CSS pixels.

    Example:
      >>> with fl.profile(sess) as prof:                    # doctest: +SKIP
      ...     for _ in range(3): sess.run(train, feed)
      >>> view = fl.viz.GraphView(sess, loss, feed)          # doctest: +SKIP
      >>> fl.viz.TimelineView(prof, graph=view)              # doctest: +SKIP
    """

    _model_name = traitlets.Unicode("TimelineModel").tag(sync=True)
    _model_module = traitlets.Unicode(MODULE).tag(sync=True)
    _model_module_version = traitlets.Unicode(MODULE_VERSION).tag(sync=True)
    _view_name = traitlets.Unicode("TimelineView").tag(sync=True)
    _view_module = traitlets.Unicode(MODULE).tag(sync=True)
    _view_module_version = traitlets.Unicode(MODULE_VERSION).tag(sync=True)

    timeline = traitlets.Dict().tag(sync=True)
    graph = traitlets.Instance(GraphView, allow_none=True).tag(sync=True, **widgets.widget_serialization)
    view_height = traitlets.Int(250).tag(sync=True)

    def __init__(self, trace: Any, graph: GraphView | None = None, *, steps: Any = None,
                 max_steps: int = MAX_STEPS, height: int | None = None) -> None:
        super().__init__()
        self.trace = as_trace(trace)
        if graph is not None and not isinstance(graph, GraphView):
            raise TypeError(f"TimelineView(graph=...) links with a flowlab.viz.GraphView, "
                            f"not {type(graph).__name__}.")
        self.max_steps = max_steps
        self.timeline = timeline_model(self.trace, steps, max_steps)
        self.graph = graph
        lanes = len(self.timeline["lanes"])
        # Room for the lanes, and for an op's details on hover.
        self.view_height = height if height is not None else min(520, max(250, 90 + 22 * lanes))

    def update(self, trace: Any, steps: Any = None) -> None:
        """Show another trace (say, the profile of later steps)."""
        self.trace = as_trace(trace)
        self.timeline = timeline_model(self.trace, steps, self.max_steps)

    def to_chrome(self, path: str) -> str:
        """Write the trace as Chrome trace event JSON to `path` (open it in Perfetto)."""
        return self.trace.to_chrome(path)
