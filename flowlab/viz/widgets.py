"""`GraphView`: the live, clickable view of a graph in JupyterLab (an ipywidgets DOMWidget).

Its front end is the `flowlab-widgets` JupyterLab extension (`extension/`, shipped in
the wheel).  The widget holds the stages of a step as `Picture`s (the same model as the
static SVG, `flowlab.viz.model`) and sends the browser one laid-out stage at a time
(`flowlab.viz.layout`): the `model` trait, which is also what the notebook saves, so a
reopened notebook shows the last picture without a kernel.

Kernel <-> browser messages (custom comm messages, `{"t": kind, ...}`):
  browser -> kernel: `stage` (the one shown), `expand` / `collapse` (scope, stage),
    `select` (op name: its outputs are summarized while steps run), `search` (q);
  kernel -> browser: `found` (ids whose ops match a search, collapsed scopes
    included), `layout` (one stage laid out again after `expand` / `collapse`), `live` (per stage: running / finished node ids, bytes per edge; steps;
    from `flowlab.viz.live`, at most ~15 a second).
The kernel answers the browser only between cells (a running cell holds its shell
channel), so everything the browser needs while a step runs is already in `layouts`:
every stage laid out, every drawn node with its side-panel rows (`info`).  The live
updates flow the other way, from the bridge's thread, and do not wait.
Everything sent is data; the front end renders every string as text.

State: `stages` (name -> Picture), `stage`, `expanded` / `collapsed` scopes per stage,
`_maps` (per stage: op name -> drawn id, for live events), `values` (the last value
summary of the watched node).  Invariant: `layouts[stage]` is the layout of
`stages[stage]` with that stage's expand/collapse sets, and `_maps[stage]` its ids.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

from flowlab.graph.graph_def import graph_to_dict
from flowlab.viz.layout import layout
from flowlab.viz.live import LiveBridge
from flowlab.viz.model import RECV_TYPES, SEND_TYPES, Picture, from_graph_def, to_picture

MODULE = "flowlab-widgets"
MODULE_VERSION = "^0.1.0"
# Past this many ops, scopes of more than 8 ops start collapsed (else more than 40).
BIG_GRAPH = 500


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built labextension lies, for `jupyter labextension develop` (relative
    to the `flowlab` package, whose `flowlab/labextension` the build writes)."""
    return [{"src": "labextension", "dest": MODULE}]


def labextension_installed() -> bool:
    """Whether JupyterLab can find the `flowlab-widgets` labextension."""
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        return False
    return any(os.path.exists(os.path.join(d, MODULE, "package.json"))
               for d in jupyter_path("labextensions"))


def available() -> bool:
    """Whether the live views can be shown here: inside a Jupyter kernel, with the
    labextension installed (`flowlab.show` uses the widget then, else the SVG)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None and labextension_installed()


def view(obj: Any, **kwargs: Any) -> GraphView:
    """The widget `flowlab.show(obj, **kwargs)` displays."""
    return GraphView(obj, **kwargs)


class GraphView(widgets.DOMWidget):
    """A graph, its step's stages, and its steps live.

    Args:
      graph_or_session: a Session (its graph; its steps light up live), a Graph, or
        anything `flowlab.viz.graph` draws (a GraphDef dict, a Placement, partitions, a
        Trace, a Picture).
      fetches, feed_dict: with a Session, the step whose stages to show (full graph,
        pruned, optimized, placed, partitioned), as `Session.run` takes them.
      trace: a profiler Trace: Send/Recv edges show its bytes, nodes their run time.
      collapse_above, expand, collapse, rankdir: as for `flowlab.viz.graph`
        (collapse_above default: 40, or 8 past `BIG_GRAPH` ops).
      stage: the stage shown first (default: "placed" when there is one).
      live: watch the session's steps (default: when a Session is given).
      height: the view's height in CSS pixels.

    Example:
      >>> view = fl.viz.GraphView(sess, loss, {x: None})   # doctest: +SKIP
      >>> view                                            # then sess.run(...) anywhere
    """

    _model_name = traitlets.Unicode("GraphModel").tag(sync=True)
    _model_module = traitlets.Unicode(MODULE).tag(sync=True)
    _model_module_version = traitlets.Unicode(MODULE_VERSION).tag(sync=True)
    _view_name = traitlets.Unicode("GraphView").tag(sync=True)
    _view_module = traitlets.Unicode(MODULE).tag(sync=True)
    _view_module_version = traitlets.Unicode(MODULE_VERSION).tag(sync=True)

    # stage -> its laid-out picture (flowlab.viz.layout), each node with its details
    layouts = traitlets.Dict().tag(sync=True)
    stage_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    stage = traitlets.Unicode("").tag(sync=True)  # shown first; the browser switches itself
    missing = traitlets.Dict().tag(sync=True)  # stage -> why it is not shown
    device_names = traitlets.List(traitlets.Unicode()).tag(sync=True)  # where ops may move
    # predicted_us (the placement replayed on the cost model), measured_us (the last
    # watched step), moved ([op, device] asked for by `place`), error (of the last move)
    timing = traitlets.Dict().tag(sync=True)
    # stage -> drawn id -> state ("done", "ready", "next", "stopped", "error", "dead"):
    # a Stepper's states over the picture's own (see `mark`)
    marks = traitlets.Dict().tag(sync=True)
    view_height = traitlets.Int(520).tag(sync=True)

    def __init__(self, graph_or_session: Any, fetches: Any = None, feed_dict: Any = None, *,
                 trace: Any = None, collapse_above: int | None = None, expand: Any = (), collapse: Any = (),
                 rankdir: str = "TB", stage: str | None = None, live: bool | None = None,
                 height: int = 520, title: str | None = None, legend: bool = True,
                 graph: Any = None) -> None:
        super().__init__()
        obj = graph_or_session
        self.session = obj if hasattr(obj, "set_listener") and hasattr(obj, "graph") else None
        self.graph = self.session.graph if self.session is not None else (
            obj if hasattr(obj, "get_operation_by_name") else graph)
        self.placement: Any = None
        self.stages: dict[str, Picture] = {}
        self._step: tuple[Any, Any] | None = None
        self._trace = trace
        self._requested: dict[str, str] = {}  # op name -> its device request before a move
        self.measured_us: float | None = None  # the last watched step, first op to last
        missing: dict[str, str] = {}
        if self.session is not None and fetches is not None:
            self._step = (fetches, feed_dict)
            missing = self._stage_step()
            self.device_names = [d.name for d in self.session.list_devices()]
        elif self.session is not None:
            self.stages = {"full graph": from_graph_def(graph_to_dict(self.graph), title="full graph")}
        else:
            pic = to_picture(obj, graph=graph, title=title)
            self.stages = {pic.title or "graph": pic}
            self.placement = obj if hasattr(obj, "device_of") else None
        if trace is not None and self._step is None:
            from flowlab.viz import apply_trace

            for pic in self.stages.values():
                apply_trace(pic, trace)
        if collapse_above is None:  # a big graph opens on its scopes, not on its ops
            biggest = max(len(p.nodes) for p in self.stages.values())
            collapse_above = 40 if biggest <= BIG_GRAPH else 8
        self.options = {"collapse_above": collapse_above, "rankdir": rankdir}
        self.expanded: dict[str, set[str]] = {s: set(_names(expand)) for s in self.stages}
        self.collapsed: dict[str, set[str]] = {s: set(_names(collapse)) for s in self.stages}
        self.values: dict[str, str] = {}
        self._marked: dict[str, str] = {}
        self.selected: str | None = None
        # stage -> (op name -> drawn id, Recv or tensor name -> edge indices)
        self._maps: dict[str, tuple[dict[str, str], dict[str, list[int]]]] = {}
        self._scopes: dict[str, dict[str, list[str]]] = {}  # stage -> scope id -> its ops
        self._lock = threading.Lock()
        self.missing = missing
        self.view_height = height
        self.stage_names = list(self.stages)
        first = stage if stage is not None else ("placed" if "placed" in self.stages else self.stage_names[0])
        if first not in self.stages:
            raise ValueError(f"no stage {first!r}; stages: {', '.join(self.stages)}")
        self.layouts = {name: self._layout(name) for name in self.stages}
        self.stage = first
        self.timing = self._timing()
        self.on_msg(self._on_msg)
        self.bridge: LiveBridge | None = None
        if self.session is not None and (live is None or live):
            self.bridge = LiveBridge(self.session, self._send_live, on_value=self._on_value)
            self.bridge.start()

    def _stage_step(self) -> dict[str, str]:
        """The stages of the session's step, as the session would run it now; returns
        the stages it cannot show."""
        from flowlab.viz.passes import passes

        assert self.session is not None and self._step is not None
        fetches, feed_dict = self._step
        p = passes(self.session, fetches, feed_dict)
        self.stages = dict(p.stages)
        self.placement = self.session.placement(fetches, feed_dict)
        if self._trace is not None:
            from flowlab.viz import apply_trace

            for pic in self.stages.values():
                apply_trace(pic, self._trace)
        return dict(p.missing)

    # --- placement you can try -------------------------------------------------------
    def place(self, name: str, device: str | None) -> None:
        """Ask for `device` for op `name`, or for every op in name scope `name`, and
        show the step as the session now places and partitions it (the stages are
        laid out again; `timing` gets the new predicted step time, and the measured one
        after the next step).  `device=None` puts back the ops' own requests.

        This sets the ops' device requests in the graph, as `with fl.device(...)` would
        have: the session places the step again at its next run.  Ops holding state (a
        variable and the ops reading it by reference) keep the device they have.

        Raises:
          ValueError: the view is not of a session's step, or no such op or scope.
          flowlab.errors.OpError: the session cannot place the step so (the requests
            are put back as they were).
        """
        if self.session is None or self._step is None:
            raise ValueError("GraphView.place needs the view of a session's step: "
                             "GraphView(sess, fetches, feed_dict).")
        name = name.rstrip("/")
        ops = [op for op in self.graph.get_operations()
               if op.name == name or op.name.startswith(name + "/")]
        if not ops:
            raise ValueError(f"GraphView.place: no op named '{name}' or in name scope '{name}/'.")
        before = {op.name: op.device for op in ops}
        for op in ops:
            self._requested.setdefault(op.name, op.device)
            op._set_device(device if device is not None else self._requested[op.name])
        try:
            self._replace()
        except Exception:
            for op in ops:
                op._set_device(before[op.name])
            self._replace()
            raise

    def _replace(self) -> None:
        self.graph._bump_version()  # the session's cached plans are of the old requests
        self.measured_us = None  # measured again at the next step
        self.missing = self._stage_step()
        self.layouts = {name: self._layout(name) for name in self.stages}
        self._remark()
        self.timing = self._timing()

    def _timing(self) -> dict[str, Any]:
        """The placed step's predicted time (the cost model's replay of the placement),
        the ops moved, and the last step's measured time."""
        out: dict[str, Any] = {"moved": sorted([n, op_device(self.graph, n)] for n in self._requested
                                               if op_device(self.graph, n) != self._requested[n])}
        pl = self.placement
        if pl is not None and self.graph is not None:
            from flowlab.runtime.master.cost_model import simulate

            ops = _topological([_op(self.graph, n) for n in pl.device_of])
            config = getattr(self.session, "config", None) or getattr(self.session, "_config", None)
            predicted, _ = simulate(ops, pl.device_of, getattr(config, "cost_model", None))
            out["predicted_us"] = round(predicted * 1e6, 1)
        measured = getattr(self, "measured_us", None)
        if measured is not None:
            out["measured_us"] = measured
        return out

    # --- what is shown --------------------------------------------------------------
    @property
    def picture(self) -> Picture:
        """The picture of the stage shown first (or last asked for by the browser)."""
        return self.stages[self.stage]

    @property
    def model(self) -> dict[str, Any]:
        """The laid-out stage shown first (see `flowlab.viz.layout`)."""
        return self.layouts[self.stage]

    def show_stage(self, name: str) -> None:
        """Show stage `name` ("full graph", "pruned", "optimized", "placed", "partitioned")."""
        if name not in self.stages:
            raise ValueError(f"no stage {name!r}; stages: {', '.join(self.stages)}")
        self.stage = name

    def expand(self, scope: str, stage: str | None = None) -> None:
        """Open name scope `scope` of a stage (default: the one shown), re-laid out here."""
        stage = stage or self.stage
        scope = scope.rstrip("/")
        self.collapsed[stage].discard(scope)
        self.expanded[stage].add(scope)
        self._relaid(stage)

    def collapse(self, scope: str, stage: str | None = None) -> None:
        """Draw name scope `scope` of a stage (default: the one shown) as one node."""
        stage = stage or self.stage
        scope = scope.rstrip("/")
        self.expanded[stage].discard(scope)
        self.collapsed[stage].add(scope)
        self._relaid(stage)

    def _relaid(self, stage: str) -> None:
        """Lay `stage` out again and send the browser that stage alone (a `layout`
        message, which the front end folds into its `layouts`, so a saved notebook has
        it): the trait's other stages are already there, and a view of a session's step
        has five."""
        m = self._layout(stage)
        new = {**self.layouts, stage: m}
        if len(new) == 1 or self.comm is None:
            self.layouts = new
        else:
            # The trait changes here without being sent (ipywidgets skips a value that
            # equals the locked one, as it does for the browser's own updates).
            with self._lock_property(layouts=json.loads(json.dumps(new))):
                self.layouts = new
            self.send({"t": "layout", "stage": stage, "layout": m})
        self._remark()

    def _layout(self, stage: str) -> dict[str, Any]:
        pic = self.stages[stage]
        m = layout(pic, expand=self.expanded[stage], collapse=self.collapsed[stage], **self.options)
        id_of: dict[str, str] = {}
        for node in m["nodes"]:
            if node["kind"] != "scope":
                id_of[node["name"]] = node["id"]
        members = m.pop("members")  # the kernel keeps them: the saved state stays small
        for nid, names in members.items():
            for n in names:
                id_of[n] = nid
        edge_of: dict[str, list[int]] = {}
        for i, e in enumerate(m["edges"]):
            if e["kind"] == "t":
                edge_of.setdefault(e["key"], []).append(i)
            elif e["kind"] == "x":
                edge_of.setdefault(_tensor(e["key"]), []).append(i)
        # A Recv not drawn in this stage (one before partitioning) finds its edge through
        # the tensor it carries (the cross-device edge of the placed stage).
        for other in self.stages.values():
            for n in other.nodes:
                if n.op in RECV_TYPES and n.name not in edge_of:
                    # `_src`: the op whose output it carries (TF's rendezvous key is not a tensor)
                    tensor = _tensor(str(n.attrs.get("_src") or n.attrs.get("tensor_name", "")))
                    if tensor in edge_of:
                        edge_of[n.name] = edge_of[tensor]
        # The side panel, there with no kernel round trip.  Rows are indices into one
        # table of strings per layout: scopes of an unrolled loop share most of theirs
        # (op types, shapes, where they were defined), and the saved state stays small.
        strings: dict[str, int] = {}
        intern = strings.setdefault
        for node in m["nodes"]:
            if node["kind"] == "scope":
                rows = self._scope_rows(node["name"], members.get(node["id"], []), pic)
            else:
                rows = self.node_rows(node["name"], pic)
            node["info"] = [[intern(s, len(strings)), intern(k, len(strings)), intern(v, len(strings))]
                            for s, k, v in rows]
        m["strings"] = list(strings)
        with self._lock:
            self._maps[stage] = (id_of, edge_of)
            self._scopes[stage] = members
        return m

    def mark(self, states: dict[str, str]) -> None:
        """Outline ops by state, over the picture's own (`flowlab.viz.StepperView` marks
        what ran, what is ready, the op to run next and where the step stopped).

        `states` maps op names to "done", "ready", "next", "break" (a breakpoint),
        "stopped", "error" or "dead";
        a collapsed scope shows the most telling state among its ops ("stopped" over
        "next" over "ready"), and "done" once all its ops are.

        Raises:
          ValueError: an unknown state.
        """
        bad = sorted(set(states.values()) - set(_MARK_RANK))
        if bad:
            raise ValueError(f"GraphView.mark: unknown state {bad[0]!r}; states: {', '.join(_MARK_RANK)}.")
        self._marked = dict(states)
        self._remark()

    def _remark(self) -> None:
        out: dict[str, dict[str, str]] = {}
        with self._lock:
            maps = {s: (m[0], self._scopes[s]) for s, m in self._maps.items()}
        for stage, (id_of, scopes) in maps.items():
            per: dict[str, str] = {}
            for name, nid in id_of.items():
                if nid not in scopes and name in self._marked:
                    per[nid] = self._marked[name]
            for nid, names in scopes.items():  # collapsed scopes
                states = [self._marked.get(n) for n in names]
                told = [s for s in states if s in ("stopped", "error", "next", "break", "ready")]
                if told:
                    per[nid] = max(told, key=_MARK_RANK.index)
                elif states and all(s in ("done", "dead") for s in states):
                    per[nid] = "done"
            out[stage] = per
        self.marks = out

    # --- browser messages -----------------------------------------------------------
    def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("t")
        stage = str(content.get("stage", "")) or self.stage
        if stage not in self.stages:
            return
        if kind == "stage":
            self.show_stage(stage)
        elif kind == "expand":
            self.expand(str(content.get("scope", "")), stage)
        elif kind == "collapse":
            self.collapse(str(content.get("scope", "")), stage)
        elif kind == "select":
            name = str(content.get("name", ""))
            self.selected = name if name in self.stages[stage].by_name else None
            if self.bridge is not None:
                self.bridge.watched = self.selected
        elif kind == "place":
            device = content.get("device")
            try:
                self.place(str(content.get("name", "")), str(device) if device else None)
            except Exception as e:  # noqa: BLE001 - the browser shows why the move failed
                self.timing = {**self._timing(), "error": f"{type(e).__name__}: {getattr(e, 'message', e)}"}
        elif kind == "search":
            q = str(content.get("q", ""))
            self.send({"t": "found", "q": q, "stage": stage, "ids": self.search(q, stage)})

    def info(self, name: str, stage: str | None = None) -> list[list[str]]:
        """The side-panel rows (`[section, key, value]`) the browser shows for the drawn
        node of op or collapsed scope `name` in a stage (default: the one shown).

        Raises:
          KeyError: nothing of that name is drawn there.
        """
        return info_rows(self.layouts[stage or self.stage], name)

    def search(self, q: str, stage: str | None = None) -> list[str]:
        """Ids of the nodes drawn in a stage holding an op whose name contains `q`
        (case-blind), ops inside collapsed scopes included."""
        q = q.lower()
        if not q:
            return []
        with self._lock:
            id_of = self._maps[stage or self.stage][0]
            return sorted({nid for name, nid in id_of.items() if q in name.lower()})

    def _scope_rows(self, scope: str, names: list[str], pic: Picture) -> list[list[str]]:
        rows = [["scope", "name", scope], ["scope", "ops", str(len(names))]]
        ops: dict[str, int] = {}
        devices: dict[str, None] = {}
        for n in names:
            pn = pic.by_name[n]
            ops[pn.op] = ops.get(pn.op, 0) + 1
            if pn.partition or pn.device:
                devices.setdefault(pn.partition or pn.device, None)
        top = sorted(ops.items(), key=lambda kv: -kv[1])
        rows.append(["scope", "op types", ", ".join(f"{op} ×{k}" for op, k in top[:8])
                     + (f", {len(top) - 8} more" if len(top) > 8 else "")])
        rows += [["placement", "device", d] for d in devices]
        return rows

    def node_rows(self, name: str, pic: Picture | None = None) -> list[list[str]]:
        """The side panel of op `name` in `pic` (default: the stage shown): `[section,
        key, value]` rows, all text -- type, attrs, inputs and outputs with dtypes and
        shapes, requested and placed device, the placement's reason and predicted
        finish times, bytes moved, where it was defined, its traced run time and the
        last value seen."""
        pic = pic or self.picture
        pn = pic.by_name[name]
        rows: list[list[str]] = [["op", "name", pn.name], ["op", "type", pn.op]]
        op = _op(self.graph, name)
        for k, v in sorted(pn.attrs.items()):
            rows.append(["attrs", str(k), _short(v)])
        if op is not None:
            for i, t in enumerate(op.inputs):
                rows.append(["inputs", str(i), f"{t.name}  {_tensor_type(t)}"])
            for c in op.control_inputs:
                rows.append(["inputs", "^", c.name])
            for i, t in enumerate(op.outputs):
                rows.append(["outputs", str(i), f"{t.name}  {_tensor_type(t)}"])
        else:
            for i, inp in enumerate(pn.inputs):
                rows.append(["inputs", str(i), inp])
            for c in pn.control_inputs:
                rows.append(["inputs", "^", c])
        device = pn.partition or pn.device
        if op is not None and op.device and op.device != device:
            rows.append(["placement", "requested", op.device])
        rows.append(["placement", "device", device or "(not placed)"])
        pl = self.placement
        if pl is not None:
            reason = (getattr(pl, "reasons", None) or {}).get(name)
            if reason:
                rows.append(["placement", "reason", str(reason)])
            for dev, t in sorted((getattr(pl, "estimates", None) or {}).get(name, {}).items(),
                                 key=lambda kv: kv[1]):
                rows.append(["placement", f"finish on {dev}", f"{t * 1e3:.3f} ms (predicted)"])
        if pn.op in SEND_TYPES or pn.op in RECV_TYPES:
            tensor = str(pn.attrs.get("tensor_name", ""))
            nbytes = pic.transfer_bytes.get(pn.name, pic.transfer_bytes.get(tensor))
            if nbytes is not None:
                rows.append(["transfer", "bytes", str(nbytes)])
        if op is not None:
            for f in op.traceback[:3]:
                rows.append(["defined at", f"{os.path.basename(f.filename)}:{f.lineno}", f.name])
        if pn.note:
            rows.append(["traced", "run time", pn.note])
        return rows

    # --- live -----------------------------------------------------------------------
    def _on_value(self, name: str, outputs: Any) -> None:
        if outputs:
            self.values[name] = summarize(outputs[0])

    def _send_live(self, msg: dict[str, Any]) -> None:
        """The bridge's update, from op names to the ids and edges drawn in every stage
        (the browser switches stages by itself, even while the kernel is busy)."""
        with self._lock:
            maps = dict(self._maps)
        per_stage: dict[str, Any] = {}
        for stage, (id_of, edge_of) in maps.items():
            get = id_of.get
            run_ids = {get(n) for n in msg["run"]}
            run_ids.discard(None)
            done_ids = {get(n) for n in msg["done"]}
            done_ids.discard(None)
            run = sorted(run_ids)  # type: ignore[type-var]
            done = sorted(done_ids - run_ids)  # type: ignore[type-var]
            xfer: dict[str, int] = {}
            for recv, nb in msg["bytes"].items():
                for i in edge_of.get(recv, ()):
                    xfer[str(i)] = xfer.get(str(i), 0) + nb
            if run or done or xfer:
                per_stage[stage] = {"run": run, "done": done, "xfer": xfer}
        out: dict[str, Any] = {"t": "live", "stages": per_stage, "steps": msg["steps"],
                               "idle": msg["idle"]}
        if msg.get("step_us") is not None:
            self.measured_us = msg["step_us"]
            out["step_us"] = msg["step_us"]
        if self.selected is not None and self.selected in self.values:
            out["value"] = [self.selected, self.values[self.selected]]
        self.send(out)

    def stop(self) -> None:
        """Stop watching the session's steps (the view stays, static)."""
        if self.bridge is not None:
            self.bridge.stop()

    def close(self) -> None:
        self.stop()
        super().close()


def info_rows(m: dict[str, Any], name: str) -> list[list[str]]:
    """The side-panel rows of the node named `name` in laid-out stage `m`, as text."""
    strings = m["strings"]
    for node in m["nodes"]:
        if node["name"] == name:
            return [[strings[i] for i in row] for row in node["info"]]
    raise KeyError(f"no node named {name!r} is drawn in this stage")


# Mark states, least telling first.
_MARK_RANK = ("dead", "done", "ready", "break", "next", "error", "stopped")



def summarize(value: Any) -> str:
    """`shape (2, 3) float32  min -1 max 4 mean 0.5  nan 0 inf 0` of an array-like."""
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - an opaque value (a resource handle): its type
        return type(value).__name__
    text = f"shape {tuple(a.shape)} {a.dtype}"
    if a.size and a.dtype.kind in "fiub":
        af = a.astype(np.float64, copy=False)
        finite = np.isfinite(af)
        if finite.any():
            f = af[finite]
            text += f"  min {f.min():.4g} max {f.max():.4g} mean {f.mean():.4g}"
        text += f"  nan {int(np.isnan(af).sum())} inf {int(np.isinf(af).sum())}"
    elif a.size and a.dtype.kind in "OSU":
        text += f"  first {str(a.flat[0])[:40]!r}"
    return text


def _names(names: Any) -> list[str]:
    return [names] if isinstance(names, str) else list(names or ())


def op_device(graph: Any, name: str) -> str:
    """The device op `name` of `graph` asks for ("" when none or no such op)."""
    op = _op(graph, name)
    return op.device if op is not None else ""


def _topological(ops: list[Any]) -> list[Any]:
    """`ops` (Nones dropped) in an order where every op comes after its inputs among them."""
    ops = [op for op in ops if op is not None]
    names = {op.name for op in ops}
    deps = {op.name: {t.op.name for t in op.inputs if t.op.name in names}
            | {c.name for c in op.control_inputs if c.name in names} for op in ops}
    by_name = {op.name: op for op in ops}
    out: list[Any] = []
    done: set[str] = set()
    seen: set[str] = set()  # visited: a loop's back edge (NextIteration) is not followed
    for op in ops:
        stack = [(op.name, False)]
        while stack:
            n, finished = stack.pop()
            if finished:
                done.add(n)
                out.append(by_name[n])
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            stack.extend((d, False) for d in deps[n] if d not in seen)
    return out


def _tensor(name: str) -> str:
    base, sep, idx = name.rpartition(":")
    return name if sep and idx.isdigit() else name + ":0"


def _op(graph: Any, name: str) -> Any:
    if graph is None:
        return None
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


def _tensor_type(t: Any) -> str:
    dtype = getattr(getattr(t, "dtype", None), "name", "?")
    return f"{dtype} {t.shape}"


def _short(v: Any, limit: int = 120) -> str:
    s = str(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"
