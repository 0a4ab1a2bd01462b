"""What a picture shows: a small, front-end-neutral model of a graph at one stage.

Every object that can be drawn (a Graph, a GraphDef dict, a list of ops, a Placement,
per-device partitions, an optimized GraphDef, a Trace, a Stepper) is first turned into
a `Picture`: nodes with their op type, device, data and control inputs, loop frame,
and optional run-time facts (bytes moved by a Send/Recv pair, a node's state in a
stepped step).  The DOT writer (`flowlab.viz.dot`) and, later, the widget read only
this model, so a new kind of object needs one adapter here and nothing else.

Objects of other layers take part without this module importing them: an object
with a `_flowlab_picture_()` method returns something `to_picture` accepts (a
`Picture`, a GraphDef dict, a mapping of device -> GraphDef for partitions, ...).
The rest is recognized by shape (duck typing), never by importing upward.

Invariants: node names are unique within a picture; `inputs` hold TensorFlow's input
strings ("a", "a:1"); control inputs are names without "^"; `frame` is the tuple of
loop-frame names a node sits in, outermost first (() outside every loop), computed
from Enter/Exit (`frame_name` attr) as TensorFlow's executor assigns frames.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowlab.graph.graph_def import graph_to_dict, node_to_dict

_ENTER = {"Enter", "RefEnter"}
_EXIT = {"Exit", "RefExit"}
SEND_TYPES = {"_Send", "_HostSend", "Send"}
RECV_TYPES = {"_Recv", "_HostRecv", "Recv"}
CLIENT_TYPES = {"_Arg", "_Retval"}
# Names the runtime makes up for the nodes it adds (Send/Recv `a/_3`, a control edge's
# dummy `NoOp_2/_38`, a replicated constant `c/replicate/_1`): not scopes of the user's.
_GENERATED = re.compile(r"(?:/replicate)?(?:/_\d+)+$")


def base_name(name: str) -> str:
    """The op a runtime-made node belongs to: `layer1/Relu/_0` -> `layer1/Relu`,
    `lr/replicate/_1` -> `lr`; other names are their own base."""
    base = _GENERATED.sub("", name)
    return base or name


def is_generated(name: str) -> bool:
    """Whether `name` is one the runtime made up (see `base_name`)."""
    return base_name(name) != name


@dataclass
class PNode:
    """One node of a picture."""

    name: str
    op: str
    device: str = ""
    inputs: list[str] = field(default_factory=list)
    control_inputs: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)  # plain values (str, int, ...)
    partition: str | None = None  # the partition (device) it belongs to, when partitioned
    frame: tuple[str, ...] = ()
    state: str | None = None  # stepper: done, ready, dead, next, stopped, error
    note: str = ""  # an extra label line (a duration, a reason)
    tooltip: str = ""
    client: bool = False  # a feed/fetch through the client device, shown only (never run)


@dataclass
class Picture:
    """A graph as one picture shows it (see the module docstring)."""

    nodes: list[PNode]
    title: str = ""
    partitioned: bool = False
    placed: bool = False  # devices are assignments, not requests
    # bytes moved per transfer, keyed by the Recv node's name or the tensor name
    transfer_bytes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {n.name: n for n in self.nodes}
        assign_frames(self.nodes)

    def devices(self) -> list[str]:
        """The devices named by nodes, in order of first appearance."""
        seen: dict[str, None] = {}
        for n in self.nodes:
            d = n.partition or n.device
            if d:
                seen.setdefault(d, None)
        return list(seen)


# --- frames ---------------------------------------------------------------------------
def assign_frames(nodes: list[PNode]) -> None:
    """Set each node's loop frame from Enter/Exit: an Enter and everything fed by it up
    to the matching Exit (inclusive) are in the child frame named by `frame_name`.

    Passes over the nodes in their order (creation order is topological except for
    NextIteration back edges) until nothing changes; inputs from unknown nodes count
    as the root frame."""
    by_name = {n.name: n for n in nodes}
    out_frame: dict[str, tuple[str, ...]] = {}
    for _ in range(len(nodes) + 1):
        changed = False
        for n in nodes:
            srcs = [_src_name(i) for i in n.inputs] + list(n.control_inputs)
            known = [out_frame[s] for s in srcs if s in out_frame]
            if not known and any(s in by_name for s in srcs):
                continue  # an input this pass has not reached yet
            inner = max(known, key=len) if known else ()
            if n.op in _ENTER:
                # Without the attr (a trace's records), the Enters of one loop share
                # their name scope ("while/"), as TensorFlow's frame names do.
                inner = inner + (str(n.attrs.get("frame_name") or n.name.rpartition("/")[0] or n.name),)
                mine, out = inner, inner
            elif n.op in _EXIT:
                mine, out = inner, inner[:-1]
            else:
                mine, out = inner, inner
            if out_frame.get(n.name) != out or n.frame != mine:
                out_frame[n.name] = out
                n.frame = mine
                changed = True
        if not changed:
            break


def _src_name(inp: str) -> str:
    name = inp[1:] if inp.startswith("^") else inp
    base, sep, idx = name.rpartition(":")
    return base if sep and idx.isdigit() else name


# --- adapters -------------------------------------------------------------------------
def to_picture(obj: Any, *, graph: Any = None, title: str | None = None) -> Picture:
    """Turn anything drawable into a `Picture`.

    Args:
      obj: a Graph, a GraphDef dict, a list of Operations, a Placement (with `graph`,
        default: the default graph), partitions (a mapping device -> GraphDef, a list
        of GraphDefs, or an object with `partition_graphs`), an object with
        `_flowlab_picture_()`, or a Picture.
      graph: the Graph whose ops a Placement names.
      title: the picture's title.

    Raises:
      TypeError: `obj` is none of these.
    """
    pic = _to_picture(obj, graph)
    if title is not None:
        pic.title = title
    return pic


def _to_picture(obj: Any, graph: Any) -> Picture:
    if isinstance(obj, Picture):
        return obj
    hook = getattr(type(obj), "_flowlab_picture_", None)
    if hook is not None:
        return _to_picture(hook(obj), graph)
    gd = getattr(obj, "graph_def", None)  # an optimization result: graph_def()
    if callable(gd) and hasattr(obj, "ops"):
        pic = from_graph_def(gd(), title="optimized")
        for name in getattr(obj, "folded", ()) or ():
            if name in pic.by_name:
                pic.by_name[name].note = "folded"
        merged: dict[str, list[str]] = {}
        for gone, into in (getattr(obj, "merged", None) or {}).items():
            merged.setdefault(str(into), []).append(_relative(str(gone), str(into)))
        for into, gone in merged.items():  # CSE: the op that stands for its duplicates
            if into in pic.by_name:
                n = pic.by_name[into]
                n.note = ", ".join(filter(None, [n.note, f"merged {', '.join(gone)}"]))
        return pic
    if hasattr(obj, "as_graph_def") and hasattr(obj, "get_operations"):  # a Graph
        return from_graph_def(graph_to_dict(obj), title="graph")
    if isinstance(obj, Mapping) and isinstance(obj.get("node"), list):
        return from_graph_def(obj, title=str(obj.get("title", "graph def")))
    if isinstance(obj, Mapping) and obj and all(
        isinstance(v, Mapping) and isinstance(v.get("node"), list) for v in obj.values()
    ):
        return from_partitions(obj)
    if hasattr(obj, "device_of") and isinstance(obj.device_of, Mapping):
        return from_placement(obj, graph)
    if hasattr(obj, "transfers") and isinstance(getattr(obj, "ops", None), (list, tuple)):
        return from_trace(obj)
    parts = getattr(obj, "partition_graphs", None)
    if parts is not None and not callable(parts):
        return from_partitions(parts)
    if isinstance(obj, (list, tuple)) and obj and all(hasattr(o, "node_def") for o in obj):
        return from_ops(obj)
    if isinstance(obj, (list, tuple)) and obj and all(
        isinstance(v, Mapping) and isinstance(v.get("node"), list) for v in obj
    ):
        return from_partitions(obj)
    raise TypeError(
        f"flowlab.viz cannot draw a {type(obj).__name__}: pass a Graph, a GraphDef dict, a "
        "list of Operations, a Placement, partitions (device -> GraphDef), a Trace or a Stepper."
    )


def _relative(name: str, to: str) -> str:
    """`name` without the scopes it shares with `to`: ("loss/Sum/c", "loss/Max/c") ->
    "Sum/c", ("loss/Exp_1", "loss/Exp") -> "Exp_1"."""
    a, b = name.split("/"), to.split("/")
    k = 0
    while k < min(len(a), len(b)) - 1 and a[k] == b[k]:
        k += 1
    return "/".join(a[k:])


def plain_attrs(attr: Mapping[str, Any]) -> dict[str, Any]:
    """GraphDef attr values ({"s": "x"}, {"i": 3}, ...) as plain Python values; the
    kinds a picture never shows (tensors, shapes, lists) are left out."""
    out: dict[str, Any] = {}
    for key, value in attr.items():
        if isinstance(value, Mapping) and len(value) == 1:
            kind, v = next(iter(value.items()))
            if kind in ("s", "i", "f", "b", "type"):
                out[key] = v
        elif isinstance(value, (str, int, float, bool)):
            out[key] = value
    return out


def _node_from_dict(nd: Mapping[str, Any], partition: str | None = None) -> PNode:
    inputs = [str(i) for i in nd.get("input", [])]
    return PNode(
        name=str(nd["name"]),
        op=str(nd.get("op", "")),
        device=str(nd.get("device", "") or ""),
        inputs=[i for i in inputs if not i.startswith("^")],
        control_inputs=[i[1:] for i in inputs if i.startswith("^")],
        attrs=plain_attrs(nd.get("attr", {}) or {}),
        partition=partition,
    )


def from_graph_def(graph_def: Mapping[str, Any], title: str = "graph") -> Picture:
    """A picture of one GraphDef dict (devices as written in it)."""
    nodes = [_node_from_dict(nd) for nd in graph_def["node"]]
    return Picture(nodes, title=title)


def from_ops(ops: Iterable[Any], device_of: Mapping[str, Any] | None = None,
             reasons: Mapping[str, str] | None = None, title: str = "ops") -> Picture:
    """A picture of some Operations (e.g. a pruned step), optionally with the device
    each was placed on (`device_of[name]`: a Device or a device name)."""
    nodes = []
    for op in ops:
        n = _node_from_dict(node_to_dict(op))
        if device_of is not None and op.name in device_of:
            d = device_of[op.name]
            n.device = getattr(d, "name", None) or str(d)
        if reasons is not None and op.name in reasons:
            n.tooltip = reasons[op.name]
        nodes.append(n)
    return Picture(nodes, title=title, placed=device_of is not None)


def reasons_of(placement: Any) -> Mapping[str, str] | None:
    """A Placement's op name -> why it went where it did (`reasons`, or `reason`)."""
    r = getattr(placement, "reasons", None)
    return r if r is not None else getattr(placement, "reason", None)


def from_placement(placement: Any, graph: Any = None, title: str = "placed") -> Picture:
    """A picture of a Placement: the ops it names, from `graph` (default: the graph the
    placement was made for, else the default graph), colored by the device each was
    placed on, the reason in the tooltip."""
    if graph is None:
        graph = getattr(placement, "graph", None)
    if graph is None:
        from flowlab.graph.graph import get_default_graph

        graph = get_default_graph()
    device_of = placement.device_of
    ops = [op for op in graph.get_operations() if op.name in device_of]
    missing = len(device_of) - len(ops)
    if missing:
        raise ValueError(
            f"{missing} ops of the placement are not in the graph given; pass the graph the "
            "placement was made for: flowlab.viz.graph(placement, graph=g)."
        )
    return from_ops(ops, device_of, reasons_of(placement), title=title)


def from_partitions(parts: Any, title: str = "partitioned") -> Picture:
    """A picture of per-device partitions: a mapping device -> GraphDef dict, or a list
    of GraphDef dicts (each partition's device is taken from its nodes)."""
    items: list[tuple[str, Mapping[str, Any]]]
    if isinstance(parts, Mapping):
        items = [(str(getattr(k, "name", k)), v) for k, v in parts.items()]
    else:
        items = []
        for gd in parts:
            devs = [nd.get("device") for nd in gd["node"] if nd.get("device")]
            items.append((str(devs[0]) if devs else f"partition {len(items)}", gd))
    # TensorFlow's call frame: feeds and fetches cross from and to the client device in
    # pairs that the GraphDefs show and nothing runs (`Partitions.client_pairs`).
    client = {name for p in getattr(parts, "client_pairs", None) or ()
              for name in (getattr(p, "send_op", None), getattr(p, "recv_op", None)) if name}
    nodes: list[PNode] = []
    for device, gd in items:
        for nd in gd["node"]:
            n = _node_from_dict(nd, partition=device)
            n.device = n.device or device
            n.client = n.name in client or n.op in CLIENT_TYPES
            nodes.append(n)
    return Picture(nodes, title=title, partitioned=True, placed=True)


def from_trace(trace: Any, title: str = "traced step") -> Picture:
    """A picture of the ops a trace recorded (one node per op name, at the device it
    ran on, with the inputs and Send/Recv attrs the records carry); one cluster per
    device when the step ran on several."""
    nodes: dict[str, PNode] = {}
    for rec in trace.ops:
        if rec.name in nodes:
            continue
        inputs = [str(i) for i in getattr(rec, "inputs", ())]
        nodes[rec.name] = PNode(
            name=rec.name, op=rec.op_type, device=rec.device,
            inputs=[i for i in inputs if not i.startswith("^")],
            control_inputs=[i[1:] for i in inputs if i.startswith("^")],
            attrs=dict(getattr(rec, "attrs", {}) or {}),
        )
    devices = {n.device for n in nodes.values()}
    if len(devices) > 1:
        for n in nodes.values():
            n.partition = n.device
    return Picture(list(nodes.values()), title=title, partitioned=len(devices) > 1, placed=True)
