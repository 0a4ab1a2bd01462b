"""DOT pictures of a `Picture` through the `graphviz` package (TensorBoard's graph view,
drawn statically).

Layout of a picture, outermost first: one cluster per partition (when partitioned),
one box per loop frame (Enter ... Exit), then one cluster per name scope.  A scope
with more than `collapse_above` ops is drawn as one node with its op count (the user
can `expand=` or `collapse=` scopes by name); a level holding a single scope and
nothing else is always opened, so a graph under one top scope is never one box.

Colors: nodes are filled by device, with a legend.  Edges: data solid, control
dashed, cross-device data edges and Send -> Recv pairs bold red with the tensor name
(and the bytes moved when a trace is given).  Stepper states outline nodes.

Parallel edges are drawn once: the edges between two drawn nodes (many, when one end
is a collapsed scope) are one edge labelled with their count (`×67`), the Send -> Recv
pairs between them one red edge ("12 transfers" and their bytes), and the pairs inside
one collapsed scope are counted in its tooltip, not drawn as loops.  Nodes the runtime
adds (`a/_3`, `c/replicate/_1`, see `model.base_name`) sit beside the op they belong to,
labelled by what they do ("send Relu", "to CPU:1"), never by their made-up names.  The
pairs through the client device (TensorFlow's call frame for feeds and fetches; shown
only, nothing runs them) are grey and dashed, labelled "feed x:0" / "fetch loss:0", so
the red edges are exactly the pairs the step runs.

A picture displays itself (`Drawing`, a `graphviz.Digraph`) fitted to the width of the
notebook's output area with zoom buttons (`flowlab.viz.show.zoomable_html`), not at
dot's natural size.

Every text in the picture (names, op types, devices, tooltips) is escaped for DOT and
marked as plain text, never HTML: a name such as `<b>` or `a\\l` is drawn as written.
Node ids are generated (`n0`, `n1`, ...), never taken from names.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Any

import graphviz

from flowlab.viz.model import (
    RECV_TYPES,
    SEND_TYPES,
    Picture,
    PNode,
    _src_name,
    base_name,
    is_generated,
)
from flowlab.viz.show import zoomable_html

# Fill colors by device, in order of first appearance (ColorBrewer Pastel1 + Set3).
PALETTE = (
    "#b3cde3", "#ccebc5", "#fed9a6", "#decbe4", "#ffffcc", "#e5d8bd", "#fddaec",
    "#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
)
NO_DEVICE = "#f2f2f2"
TRANSFER_COLOR = "#d62728"
CLIENT_COLOR = "#888888"
STATE_STYLE = {
    "done": {"fillcolor": "#d9d9d9", "fontcolor": "#555555"},
    "ready": {"color": "#2ca02c", "penwidth": "2.5"},
    "next": {"color": "#2ca02c", "penwidth": "3.5"},
    "dead": {"style": "rounded,dashed", "fontcolor": "#999999", "fillcolor": "white"},
    "stopped": {"color": "#d62728", "penwidth": "3.5", "fillcolor": "#ffb3b3"},
    "error": {"color": "#d62728", "penwidth": "3.5", "fillcolor": "#ff7f7f"},
}
_SHAPES = {
    "VariableV2": "cylinder", "Variable": "cylinder", "VarHandleOp": "cylinder",
    "Placeholder": "invhouse", "PlaceholderWithDefault": "invhouse", "Const": "box",
    "NoOp": "point",
}


def text(*lines: str) -> graphviz.quoting.NoHtml:
    """A DOT label of plain-text lines: backslashes and quotes escaped, never HTML."""
    return graphviz.nohtml("\\n".join(graphviz.escape(str(line)) for line in lines if line != ""))


def short_device(name: str, devices: Iterable[str] = ()) -> str:
    """`/job:localhost/replica:0/task:0/device:CPU:1` -> `CPU:1` when all `devices`
    share the job and task, else `localhost/0 CPU:1`."""
    def parts(d: str) -> tuple[str, str, str]:
        job = task = ""
        dev = d
        for p in d.strip("/").split("/"):
            if p.startswith("job:"):
                job = p[4:]
            elif p.startswith("task:"):
                task = p[5:]
            elif p.startswith("device:"):
                dev = p[7:]
        return job, task, dev

    job, task, dev = parts(name)
    hosts = {parts(d)[:2] for d in devices} | {(job, task)}
    if len(hosts) <= 1 or not job:
        return dev
    return f"{job}/{task} {dev}"


class Drawing(graphviz.Digraph):
    """The Digraph of a picture; in a notebook it shows fitted to the output's width and
    zoomable (text/html), with dot's plain SVG beside it for front ends without HTML."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **_: Any) -> dict[str, Any]:
        wanted = {"text/html", "image/svg+xml"} if include is None else set(include)
        wanted -= set(exclude or ())
        if not wanted & {"text/html", "image/svg+xml"}:
            return super()._repr_mimebundle_(include, exclude)
        svg = self.pipe(format="svg", encoding="utf-8")
        bundle: dict[str, Any] = {}
        if "text/html" in wanted:
            bundle["text/html"] = zoomable_html(svg)
        if "image/svg+xml" in wanted:
            bundle["image/svg+xml"] = svg
        return bundle


def to_dot(
    pic: Picture,
    *,
    collapse_above: int = 40,
    expand: Iterable[str] = (),
    collapse: Iterable[str] = (),
    rankdir: str = "TB",
    legend: bool = True,
) -> Drawing:
    """The graphviz.Digraph (a `Drawing`) of a picture (see the module docstring)."""
    return _Writer(pic, collapse_above, set(_strip(expand)), set(_strip(collapse)), rankdir, legend).write()


def _strip(names: Iterable[str]) -> list[str]:
    if isinstance(names, str):
        names = [names]
    return [n.rstrip("/") for n in names]


class _Sketch:
    """A stand-in for a Digraph that keeps nothing: a writer that only has to say which
    drawn node each op falls in (`_Writer.node_id`, `sketch=True`) skips graphviz's
    quoting of every attribute, most of the cost of writing a big graph."""

    def attr(self, *_: Any, **__: Any) -> None:
        pass

    def node(self, *_: Any, **__: Any) -> None:
        pass

    @contextlib.contextmanager
    def subgraph(self, **_: Any) -> Iterator[_Sketch]:
        yield self


class _Writer:
    def __init__(self, pic: Picture, collapse_above: int, expand: set[str], collapse: set[str],
                 rankdir: str, legend: bool, sketch: bool = False) -> None:
        self.pic = pic
        self.collapse_above = collapse_above
        self.expand = expand
        self.collapse = collapse
        self.legend = legend
        self.ids = itertools.count()
        self.node_id: dict[str, str] = {}  # picture node -> drawn node id (maybe a collapsed scope)
        self.collapsed_members: dict[str, int] = {}  # drawn id of a collapsed scope -> its ops
        self.tensor_of = _transfer_tensors(pic)  # Send/Recv node -> the tensor it carries
        self.devices = pic.devices()
        self.color = {d: PALETTE[i % len(PALETTE)] for i, d in enumerate(self.devices)}
        self.sketch = sketch
        self.dot: Any = _Sketch() if sketch else Drawing(name="flowlab", strict=False)
        self.dot.attr(rankdir=rankdir, compound="true", newrank="true", fontname="Helvetica")
        self.dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10",
                      fillcolor=NO_DEVICE, height="0.3")
        self.dot.attr("edge", color="#555555", arrowsize="0.6")
        if pic.title:
            self.dot.attr(label=text(pic.title), labelloc="t", fontsize="14")

    def _new_id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self.ids)}"

    # --- structure ------------------------------------------------------------------
    def write(self) -> Drawing:
        nodes = self.pic.nodes
        if self.pic.partitioned:
            by_part: dict[str, list[PNode]] = {}
            for n in nodes:
                by_part.setdefault(n.partition or "", []).append(n)
            for part, members in by_part.items():
                with self.dot.subgraph(name=f"cluster_{self._new_id('p')}") as sub:
                    sub.attr(label=text(f"partition {short_device(part, self.devices)}"),
                             style="rounded,filled", fillcolor=_lighter(self.color.get(part)),
                             color="#777777", tooltip=text(part))
                    self._frames(sub, members, ())
        else:
            self._frames(self.dot, nodes, ())
        if self.sketch:  # node_id is known: edges and legend are drawing only
            return self.dot
        self._edges()
        if self.legend and self.devices:
            self._legend()
        return self.dot

    def _frames(self, container: Any, nodes: list[PNode], frame: tuple[str, ...]) -> None:
        here = [n for n in nodes if n.frame == frame]
        self._scopes(container, here, "")
        children: dict[str, list[PNode]] = {}
        depth = len(frame)
        for n in nodes:
            if len(n.frame) > depth and n.frame[:depth] == frame:
                children.setdefault(n.frame[depth], []).append(n)
        for name, members in children.items():
            with container.subgraph(name=f"cluster_{self._new_id('f')}") as sub:
                sub.attr(label=text(f"loop frame {name}"), style="bold,dashed", color="#9467bd",
                         fontcolor="#9467bd")
                self._frames(sub, members, frame + (name,))

    def _scopes(self, container: Any, nodes: list[PNode], prefix: str) -> None:
        """Draw `nodes` (all under scope `prefix`) into `container`."""
        direct: list[PNode] = []
        sub: dict[str, list[PNode]] = {}
        plen = len(prefix) + 1 if prefix else 0
        for n in nodes:
            key = base_name(n.name)  # a runtime-made node goes where its op goes
            if key == prefix:  # the op that names this scope (a variable and its ops)
                direct.append(n)
                continue
            rest = key[plen:]
            head, sep, _ = rest.partition("/")
            if sep:
                sub.setdefault(head, []).append(n)
            else:
                direct.append(n)
        # An op named like a sibling scope is drawn inside that scope's cluster.
        for n in list(direct):
            key = base_name(n.name)
            if key != prefix and key[plen:] in sub:
                direct.remove(n)
                sub[key[plen:]].insert(0, n)
        only_one = not direct and len(sub) == 1
        for n in direct:
            key = base_name(n.name)
            self._node(container, n, key.rpartition("/")[2] if key == prefix else key[plen:])
        for head, members in sub.items():
            scope = prefix + "/" + head if prefix else head
            if len(members) <= 2:  # an op and its constant: a box around them is noise
                for m in members:
                    self._node(container, m, base_name(m.name)[plen:])
            elif not only_one and self._collapsed(scope, len(members)):
                self._collapsed_node(container, scope, head, members)
            else:
                with container.subgraph(name=f"cluster_{self._new_id('s')}") as c:
                    c.attr(label=text(head), style="rounded", color="#aaaaaa", fontcolor="#444444",
                           tooltip=text(scope))
                    self._scopes(c, members, scope)

    def _collapsed(self, scope: str, size: int) -> bool:
        if scope in self.collapse:
            return True
        if scope in self.expand:
            return False
        return size > self.collapse_above

    # --- nodes ----------------------------------------------------------------------
    def _label(self, n: PNode, label: str) -> list[str]:
        """The label lines of a node drawn under its scope as `label`."""
        if n.op in SEND_TYPES or n.op in RECV_TYPES:
            send = n.op in SEND_TYPES
            peer = str(n.attrs.get("recv_device" if send else "send_device", ""))
            tensor = self.tensor_of.get(n.name, "")
            short = tensor.rpartition("/")[2].removesuffix(":0")
            return [f"{'send' if send else 'recv'} {short}".rstrip(),
                    f"{'to' if send else 'from'} {short_device(peer, self.devices)}" if peer else "",
                    n.note]
        if n.op in ("_Arg", "_Retval"):
            return ["feed" if n.op == "_Arg" else "fetch", _call_frame_tensor(n.name), n.note]
        if is_generated(n.name):  # a replicated constant, a control edge's dummy
            what = "copy" if "/replicate/" in n.name else "control"
            return [label, f"{n.op} ({what})", n.note]
        # The op type under the name, unless the name says it already ("MatMul").
        return [label, "" if label == n.op else n.op, n.note]

    def _node(self, container: Any, n: PNode, label: str) -> None:
        nid = self._new_id()
        self.node_id[n.name] = nid
        attrs: dict[str, Any] = {
            "label": text(*self._label(n, label)),
            "tooltip": text(f"{n.name} ({n.op})", n.device, n.tooltip),
        }
        dev = n.partition or n.device
        if dev:
            attrs["fillcolor"] = self.color[dev]
        shape = _SHAPES.get(n.op)
        if n.op in SEND_TYPES or n.op in RECV_TYPES:
            shape = "cds"
            attrs["color"] = CLIENT_COLOR if n.client else TRANSFER_COLOR
            attrs["penwidth"] = "1.5"
            if n.client:
                attrs["style"] = "rounded,filled,dashed"
        if shape is not None:
            attrs["shape"] = shape
        if shape == "point":
            attrs.update(width="0.12", xlabel=attrs.pop("label"))
        if n.state in STATE_STYLE:
            attrs.update(STATE_STYLE[n.state])
        container.node(nid, **attrs)

    def _collapsed_node(self, container: Any, scope: str, head: str, members: list[PNode]) -> None:
        nid = self._new_id("c")
        for m in members:
            self.node_id[m.name] = nid
        devs = {m.partition or m.device for m in members} - {""}
        attrs: dict[str, Any] = {
            "label": text(f"{head}/", f"{len(members)} ops"),
            "tooltip": text(f"name scope {scope}: {len(members)} ops (collapsed; pass expand=[{scope!r}] to open it)"),
            "shape": "box3d", "style": "filled",
        }
        if len(devs) == 1:
            attrs["fillcolor"] = self.color[devs.pop()]
        elif len(devs) > 1:
            attrs["fillcolor"] = "white"
            attrs["tooltip"] = text(str(attrs["tooltip"]), f"devices: {len(devs)}")
        self.collapsed_members[nid] = len(members)
        states = {m.state for m in members}
        for st in ("error", "stopped", "next"):
            if st in states:
                attrs.update(STATE_STYLE[st])
                break
        container.node(nid, **attrs)

    # --- edges ----------------------------------------------------------------------
    def _edges(self) -> None:
        pic = self.pic
        # (src id, dst id, kind) -> [count, attrs of the first]: parallel edges drawn once
        edges: dict[tuple[str, str, str], list[Any]] = {}
        for n in pic.nodes:
            dst = self.node_id.get(n.name)
            if dst is None:
                continue
            dst_dev = n.partition or n.device
            for inp in n.inputs:
                src_name = _src_name(inp)
                src = self.node_id.get(src_name)
                if src is None or src == dst:
                    continue
                s = pic.by_name[src_name]
                src_dev = s.partition or s.device
                cross = pic.placed and bool(src_dev and dst_dev and src_dev != dst_dev)
                if cross:
                    attrs = {"color": TRANSFER_COLOR, "penwidth": "2",
                             "tooltip": f"{inp} -> {n.name}: crosses devices (a Send/Recv pair)"}
                else:
                    attrs = {"tooltip": f"{inp} -> {n.name}"}
                _count(edges, (src, dst, "x" if cross else "d"), attrs)
            for c in n.control_inputs:
                src = self.node_id.get(c)
                if src is None or src == dst:
                    continue
                _count(edges, (src, dst, "c"), {"style": "dashed", "color": "#888888", "arrowhead": "odot",
                                                "tooltip": f"^{c} -> {n.name} (control)"})
        for (src, dst, kind), (k, attrs) in edges.items():
            tip = attrs.pop("tooltip")
            if k > 1:
                kinds = {"c": "control edges", "x": "edges across devices", "d": "edges"}[kind]
                attrs["label"] = text(f"×{k}")
                attrs["fontsize"] = "9"
                tip = f"{k} {kinds} drawn as one; the first: {tip}"
            self.dot.edge(src, dst, tooltip=text(tip), **attrs)
        self._transfers()

    def _transfers(self) -> None:
        """Send -> Recv edges of a partitioned picture, matched by rendezvous key; the
        pairs between the same two drawn nodes as one edge (see the module docstring)."""
        pic = self.pic
        sends: dict[tuple[str, str], PNode] = {}
        for n in pic.nodes:
            if n.op in SEND_TYPES:
                sends[_key(n)] = n
        groups: dict[tuple[str, str, bool], list[tuple[PNode, PNode]]] = {}
        inside: dict[str, int] = {}
        for r in pic.nodes:
            if r.op not in RECV_TYPES:
                continue
            s = sends.get(_key(r))
            if s is None or s.name not in self.node_id or r.name not in self.node_id:
                continue
            sid, rid = self.node_id[s.name], self.node_id[r.name]
            if sid == rid:  # both ends inside one collapsed scope: no loop, a count
                inside[sid] = inside.get(sid, 0) + 1
                continue
            groups.setdefault((sid, rid, r.client or s.client), []).append((s, r))
        for (sid, rid, client), pairs in groups.items():
            known = [b for b in (self._bytes(r) for _, r in pairs) if b is not None]
            if len(pairs) == 1:
                s, r = pairs[0]
                tensor = self.tensor_of.get(r.name) or str(r.attrs.get("tensor_name", ""))
                if client:
                    tensor = f"{'feed' if s.inputs and _is_arg(pic, s.inputs[0]) else 'fetch'} {tensor}"
                label = [tensor] if tensor else []
                tip = [f"{s.name} -> {r.name}", str(r.attrs.get("send_device", "")),
                       str(r.attrs.get("recv_device", ""))]
            else:
                label = [f"{len(pairs)} transfers"]
                tip = [f"{len(pairs)} Send/Recv pairs drawn as one:"] + [
                    f"{self.tensor_of.get(r.name) or r.name}" for _, r in pairs[:10]
                ] + (["..."] if len(pairs) > 10 else [])
            if known:
                label.append(format_bytes(sum(known)))
            if client:
                tip.append("through the client device, as TensorFlow's call frame has it "
                           "(shown only: nothing runs this pair)")
                style = {"color": CLIENT_COLOR, "fontcolor": CLIENT_COLOR, "penwidth": "1.5",
                         "style": "dashed"}
            else:
                style = {"color": TRANSFER_COLOR, "fontcolor": TRANSFER_COLOR, "penwidth": "2.5",
                         "style": "bold"}
            self.dot.edge(sid, rid, label=text(*label), fontsize="9", constraint="true",
                          tooltip=text(*tip), **style)
        for nid, k in inside.items():
            self.dot.node(nid, tooltip=text(
                f"{self.collapsed_members.get(nid, 0)} ops (collapsed), "
                f"{k} Send/Recv pair{'s' if k != 1 else ''} inside"))

    def _bytes(self, r: PNode) -> int | None:
        tensor = str(r.attrs.get("tensor_name", ""))
        return self.pic.transfer_bytes.get(r.name, self.pic.transfer_bytes.get(tensor))

    def _legend(self) -> None:
        with self.dot.subgraph(name="cluster_legend") as lg:
            lg.attr(label="devices", style="rounded", color="#aaaaaa", fontsize="10")
            prev = None
            for d in self.devices:
                nid = self._new_id("l")
                lg.node(nid, label=text(short_device(d, self.devices)), tooltip=text(d),
                        fillcolor=self.color[d], shape="box", style="rounded,filled")
                if prev is not None:
                    lg.edge(prev, nid, style="invis")
                prev = nid


def _count(edges: dict[tuple[str, str, str], list[Any]], key: tuple[str, str, str],
           attrs: dict[str, Any]) -> None:
    if key in edges:
        edges[key][0] += 1
    else:
        edges[key] = [1, attrs]


def _call_frame_tensor(name: str) -> str:
    """`_arg_labels_0_0` -> `labels:0`, `_retval_loss/Neg_0_0` -> `loss/Neg:0`
    (TensorFlow's `_arg_<op>_<output>_<index>` names)."""
    for prefix in ("_arg_", "_retval_"):
        if name.startswith(prefix):
            op, _, rest = name[len(prefix):].rpartition("_")
            op, _, output = op.rpartition("_")
            if op and output.isdigit() and rest.isdigit():
                return f"{op}:{output}"
    return name


def _is_arg(pic: Picture, inp: str) -> bool:
    src = pic.by_name.get(_src_name(inp))
    return src is not None and src.op == "_Arg"


def _transfer_tensors(pic: Picture) -> dict[str, str]:
    """Send and Recv node name -> the tensor the pair carries ("layer1/Relu:0"): the
    Send's input, or the `_src` attr, or the rendezvous name without its `edge_<n>_`."""
    out: dict[str, str] = {}
    sends: dict[tuple[str, str], PNode] = {}
    for n in pic.nodes:
        if n.op in SEND_TYPES:
            sends[_key(n)] = n
            inp = n.inputs[0] if n.inputs else str(n.attrs.get("_src", ""))
            src = pic.by_name.get(_src_name(inp)) if inp else None
            if src is not None and src.op == "_Arg":
                inp = _call_frame_tensor(src.name)
            elif src is not None and is_generated(src.name) and "/replicate/" not in src.name:
                inp = "^" + base_name(src.name)  # a control edge's dummy: the control input
            elif inp and ":" not in inp:
                inp += ":0"
            out[n.name] = inp
    for n in pic.nodes:
        if n.op in RECV_TYPES:
            s = sends.get(_key(n))
            if s is not None and out.get(s.name):
                out[n.name] = out[s.name]
            else:
                t = str(n.attrs.get("_src") or n.attrs.get("tensor_name", ""))
                out[n.name] = re.sub(r"^edge_\d+_", "", t)
    return out


def _key(n: PNode) -> tuple[str, str]:
    a = n.attrs
    return (str(a.get("tensor_name", n.name)), str(a.get("recv_device", "")))


def _lighter(color: str | None) -> str:
    if not color:
        return "#fafafa"
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{int(v + (255 - v) * 0.75):02x}" for v in (r, g, b))


def format_bytes(n: int | float) -> str:
    """`1536` -> `1.5 KiB`."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
