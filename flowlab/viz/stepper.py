"""`StepperView`: `flowlab.debug.Stepper` with buttons, in JupyterLab.

The view is two widgets in a box: the Stepper's panel (`StepperPanel`, front end
`extension/src/stepper.ts`) and a `GraphView` of the step's ops (the Stepper's own
picture: its placed ops, with the partitions' Send/Recv ops when stepped per device).
The panel's buttons -- step, step n, continue, run to the selected node, abort, a
breakpoint on the selected node, stop on NaN/Inf -- send commands to the kernel, which
runs them on the Stepper and answers with the new `state` (what ran, the ready queue of
every device, the Recvs waiting for their Send, the breakpoints, where it stopped and
why, the inspected tensor) and the graph's marks (what ran, what is ready, the op to
run next, where it stopped: `GraphView.mark`).

Selecting a node in the graph (a click) inspects its first output; with "click sets
breakpoints" on, a click toggles a breakpoint there instead.  The selection reaches
the panel in the browser (an event on the graph's model), so the panel knows it with
no round trip.

State (kernel): the Stepper, the breakpoint id of each op name, the inspected tensor,
the last command's error.  Invariant: `panel.state` and the graph's marks describe
the Stepper as it is after the last command.  The kernel answers between cells, which
is when a Stepper is used.  Every string sent is data; the front end renders text.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

from flowlab.debug import DEAD, Stepper
from flowlab.viz.dot import short_device
from flowlab.viz.widgets import MODULE, MODULE_VERSION, GraphView

__all__ = ["StepperPanel", "StepperView", "inspect_value"]

# The inspector's slice: at most this many values along each of the first two axes.
SLICE = 6
HIST_BINS = 20


def inspect_value(tensor: str, value: Any) -> dict[str, Any]:
    """What the inspector shows of `value`: shape, dtype, min/max/mean of the finite
    values, NaN and Inf counts, a slice of the values (text) and a histogram of the
    finite values (`hist` counts over `edges`)."""
    if value is DEAD:
        return {"tensor": tensor, "note": "dead: its op was on an untaken branch"}
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - an opaque value (a resource handle): its type only
        return {"tensor": tensor, "note": f"not an array: {type(value).__name__}"}
    out: dict[str, Any] = {"tensor": tensor, "shape": str(tuple(a.shape)), "dtype": str(a.dtype)}
    sl = a[tuple(slice(0, SLICE) for _ in range(min(a.ndim, 2)))] if a.ndim else a
    out["values"] = np.array2string(sl, precision=4, threshold=SLICE * SLICE, edgeitems=3,
                                    max_line_width=72)
    if a.ndim and sl.shape != a.shape:
        out["slice"] = "[" + ", ".join(f":{min(SLICE, d)}" for d in a.shape[:2]) + (", ..." if a.ndim > 2 else "") + "]"
    if a.size and a.dtype.kind in "fiub":
        af = a.astype(np.float64, copy=False).ravel()
        finite = af[np.isfinite(af)]
        out["nan"] = int(np.isnan(af).sum())
        out["inf"] = int(np.isinf(af).sum())
        if finite.size:
            out["min"] = f"{finite.min():.6g}"
            out["max"] = f"{finite.max():.6g}"
            out["mean"] = f"{finite.mean():.6g}"
            lo, hi = float(finite.min()), float(finite.max())
            counts, edges = np.histogram(finite, bins=HIST_BINS if hi > lo else 1,
                                         range=(lo, hi) if hi > lo else (lo - 0.5, hi + 0.5))
            out["hist"] = [int(c) for c in counts]
            out["edges"] = [float(edges[0]), float(edges[-1])]
    return out


class StepperPanel(widgets.DOMWidget):
    """The Stepper's buttons, ready queues and tensor inspector (inside a StepperView)."""

    _model_name = traitlets.Unicode("StepperModel").tag(sync=True)
    _model_module = traitlets.Unicode(MODULE).tag(sync=True)
    _model_module_version = traitlets.Unicode(MODULE_VERSION).tag(sync=True)
    _view_name = traitlets.Unicode("StepperView").tag(sync=True)
    _view_module = traitlets.Unicode(MODULE).tag(sync=True)
    _view_module_version = traitlets.Unicode(MODULE_VERSION).tag(sync=True)

    state = traitlets.Dict().tag(sync=True)
    graph = traitlets.Instance(GraphView, allow_none=True).tag(sync=True, **widgets.widget_serialization)


class StepperView(widgets.VBox):
    """Step a step op by op with buttons, watching it in its graph.

    Args:
      stepper_or_session: a `flowlab.debug.Stepper`, or a Session (then `fetches` and
        `feed_dict` say the step, and a Stepper is made for it).
      fetches, feed_dict, stop_on_nan_or_inf, partitioned: as `Stepper` takes them.
      height: the graph's height in CSS pixels.

    Example:
      >>> view = fl.viz.StepperView(sess, loss, {x: batch}, stop_on_nan_or_inf=True)  # doctest: +SKIP
      >>> view                 # buttons: step, step n, continue, run to, abort, ...
      >>> view.stepper.value("layer2/Log:0")                                          # doctest: +SKIP
    """

    def __init__(self, stepper_or_session: Any, fetches: Any = None, feed_dict: Any = None, *,
                 stop_on_nan_or_inf: bool = False, partitioned: bool | None = None,
                 height: int = 420) -> None:
        if isinstance(stepper_or_session, Stepper):
            self.stepper = stepper_or_session
            if stop_on_nan_or_inf:
                self.stepper.stop_on_nan_or_inf = True
        elif hasattr(stepper_or_session, "graph") and hasattr(stepper_or_session, "run"):
            if fetches is None:
                raise ValueError("StepperView(sess, fetches, feed_dict): give the fetches of the step to run.")
            self.stepper = Stepper(stepper_or_session, fetches, feed_dict,
                                   stop_on_nan_or_inf=stop_on_nan_or_inf, partitioned=partitioned)
        else:
            raise TypeError(f"StepperView needs a flowlab.debug.Stepper or a Session, "
                            f"not {type(stepper_or_session).__name__}.")
        pic = self.stepper._flowlab_picture_()
        pic.title = "step"
        for n in pic.nodes:  # the marks say the states; the picture keeps its colors
            n.state = None
        self.graph_view = GraphView(pic, graph=self.stepper._sess.graph, live=False, height=height)
        self.panel = StepperPanel(graph=self.graph_view)
        self.panel.on_msg(self._on_msg)
        self._bp_ids: dict[str, int] = {}
        self.inspected: str | None = None
        self.error = ""
        self._commands = 0
        super().__init__([self.panel, self.graph_view])
        self.refresh()

    # --- commands (the buttons call these; so can a cell) ------------------------------
    def step(self, n: int = 1) -> None:
        """Run the next `n` ops (see `Stepper.step`)."""
        self._do(lambda: self.stepper.step(n))

    def continue_(self) -> None:
        """Run until a breakpoint, a NaN/Inf (when on), an error or the end."""
        self._do(self.stepper.continue_)

    def run_to(self, name: str) -> None:
        """Run until op `name` has run."""
        self._do(lambda: self.stepper.run_to(name))

    def abort(self) -> None:
        """Cancel the step (its variable writes are undone)."""
        self._do(self.stepper.abort)

    def toggle_breakpoint(self, name: str) -> None:
        """Set a breakpoint before op `name`, or remove the one there."""
        def toggle() -> None:
            if name in self._bp_ids:
                self.stepper.remove_breakpoint(self._bp_ids.pop(name))
            else:
                self._bp_ids[name] = self.stepper.add_breakpoint(name)
        self._do(toggle, inspect=False)

    def set_stop_on_nan_or_inf(self, on: bool) -> None:
        self._do(lambda: setattr(self.stepper, "stop_on_nan_or_inf", bool(on)), inspect=False)

    def inspect(self, tensor: str) -> None:
        """Show tensor `tensor` ("op:i", or an op name for its output 0) in the inspector."""
        self.inspected = tensor if ":" in tensor else f"{tensor}:0"
        self.error = ""
        self.refresh()

    def _do(self, command: Any, inspect: bool = True) -> None:
        self.error = ""
        try:
            command()
        except ValueError as e:  # not ready, not part of the step, already ran: say so
            self.error = str(e)
        stop = self.stepper.stop
        if inspect and stop.op is not None and stop.kind != "breakpoint":
            self.inspected = f"{stop.op}:0"
        self._commands += 1
        self.refresh()

    def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("t")
        name = str(content.get("name", ""))
        if kind == "step":
            self.step(max(1, int(content.get("n", 1) or 1)))
        elif kind == "continue":
            self.continue_()
        elif kind == "run_to":
            self.run_to(name)
        elif kind == "abort":
            self.abort()
        elif kind == "break":
            self.toggle_breakpoint(name)
        elif kind == "nan":
            self.set_stop_on_nan_or_inf(bool(content.get("on")))
        elif kind == "inspect" and name:
            self.inspect(name)

    # --- what is shown ---------------------------------------------------------------
    def refresh(self) -> None:
        """Send the Stepper's state to the panel and its states to the graph."""
        st = self.stepper
        devices = st.devices()
        ran = st.ran()
        state: dict[str, Any] = {
            "status": st.status, "stop": st.stop.message, "stop_kind": st.stop.kind,
            "stop_op": st.stop.op or "", "ran": len(ran), "total": len(st.ops()),
            "last": ran[-5:], "nan": bool(st.stop_on_nan_or_inf),
            "ready": [[short_device(d, devices), d, names] for d, names in st.ready_by_device().items()],
            "waiting": [[r, s] for r, s in st.waiting().items()],
            "breakpoints": sorted(self._bp_ids), "error": self.error, "commands": self._commands,
            "inspect": self._inspection(),
        }
        self.panel.state = state
        marks: dict[str, str] = {}
        for n in ran:
            marks[n] = "done"
        for n in st.dead():
            marks[n] = "dead"
        for name in self._bp_ids:
            marks[name] = "break"
        for _, _, names in state["ready"]:
            for i, n in enumerate(names):
                marks[n] = "next" if i == 0 else "ready"
        if st.stop.op is not None and st.stop.kind in ("breakpoint", "watch", "nan_or_inf", "error"):
            marks[st.stop.op] = "error" if st.stop.kind == "error" else "stopped"
        self.graph_view.mark(marks)

    def _inspection(self) -> dict[str, Any] | None:
        t = self.inspected
        if t is None:
            return None
        try:
            return inspect_value(t, self.stepper.value(t))
        except ValueError as e:
            return {"tensor": t, "note": str(e)}

    def close(self) -> None:
        # Also from __del__ of a view whose __init__ raised: its parts may not exist.
        for part in (getattr(self, "panel", None), getattr(self, "graph_view", None)):
            if part is not None:
                part.close()
        super().close()
