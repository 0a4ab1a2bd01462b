"""A laid-out `Picture` as a compact, JSON-ready model for the live views.

The live views (`flowlab.viz.widgets.GraphView`) do not lay graphs out in the browser:
the kernel draws the picture with the same DOT writer as the static SVG
(`flowlab.viz.dot`), asks graphviz for the positions (`dot -Tjson0`), and sends the
browser only what it needs to draw -- boxes, clusters, splines, labels as text.  So the
static picture and the live one never disagree: same scopes collapsed, same colors,
same Send/Recv edges, same loop-frame boxes, in the same places.  Expanding a scope
re-lays out the picture in the kernel (graphviz takes milliseconds for what a
collapsed view shows).

State: none; `layout(pic, ...)` is a function.  Invariants of its result:
  - coordinates are whole points, y grows downwards, (0, 0) is the top-left of `size`;
  - node `id`s are the DOT writer's generated ids (`n0`, `c3`), never op names;
  - every string is plain text for `textContent`, never markup;
  - `members[id]` lists the picture's node names drawn as that node (one for an op,
    the scope's ops for a collapsed scope), so live events find their box.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from flowlab.viz.dot import PALETTE, TRANSFER_COLOR, _Writer, short_device
from flowlab.viz.model import RECV_TYPES, SEND_TYPES, Picture, _src_name

# A source feeding more drawn nodes than this is an auxiliary input (see `layout`).
FANOUT_LIMIT = 8

# Model format version: bump when the front end must read the model differently.
MODEL_VERSION = 1


def decode_esc(s: str) -> str:
    """A graphviz escString as written by the DOT writer back to plain text: `\\\\` is a
    backslash, `\\n` / `\\l` / `\\r` end a line, `\\"` is a quote."""
    out: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append("\n" if nxt in "nlr" else nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _floats(s: str) -> list[float]:
    return [float(v) for v in s.replace(",", " ").split()]


def _spline(pos: str, height: float) -> tuple[list[float], list[float] | None]:
    """DOT's edge `pos` ("e,x,y x0,y0 x1,y1 ...") as flat [x0, y0, x1, y1, ...] cubic
    B-spline control points (y flipped) and the arrow tip, if any."""
    pts: list[float] = []
    tip: list[float] | None = None
    for part in pos.split(";")[0].split():
        if part.startswith("e,"):
            x, y = _floats(part[2:])
            tip = [round(x), round(height - y)]
        elif part.startswith("s,"):
            continue
        else:
            x, y = _floats(part)
            pts += [round(x), round(height - y)]
    return pts, tip


def layout(
    pic: Picture,
    *,
    collapse_above: int = 40,
    expand: Iterable[str] = (),
    collapse: Iterable[str] = (),
    rankdir: str = "TB",
    fanout_limit: int = FANOUT_LIMIT,
) -> dict[str, Any]:
    """Lay `pic` out with graphviz and return the live views' model (a JSON-ready dict).

    An op whose outputs feed more than `fanout_limit` drawn nodes (a weight read in
    every step of an unrolled loop, a placeholder, the learning rate) is drawn once,
    and its edges become short stubs at each consumer (`aux`), as TensorBoard draws
    high-degree nodes: graphviz spends seconds routing a hundred edges that span the
    whole graph (a 2,000-op unrolled LSTM: 14 s with them, 0.1 s without), and they
    would hide everything else.  The side panel still lists every input.

    Args:
      pic: the picture (see `flowlab.viz.model`).
      collapse_above, expand, collapse, rankdir: as for `flowlab.viz.graph`.
      fanout_limit: the most drawn consumers an op has before its edges become stubs.

    Returns:
      `{"v", "title", "size": [w, h], "devices": [[name, short, color], ...],
      "nodes": [...], "clusters": [...], "edges": [...], "members": {id: [names]}}`;
      a node is `{"id", "x", "y", "w", "h", "label": [lines], "name", "op", "kind",
      "dev", "shape", "state"}` (x, y: its centre; kind: op, scope, send, recv; dev: an
      index into devices or -1); a cluster is `{"x", "y", "w", "h", "label", "kind",
      "name"}` (kind: partition, frame, scope); an edge is `{"src", "dst", "kind",
      "pts", "tip", "label", "key"}` (kind: d data, c control, x cross-device,
      t Send -> Recv; key: the Recv's name for a t edge, the tensor for an x edge);
      an `aux` stub is `{"src", "dst", "kind"}` (drawn ids, an edge kind).

    Raises:
      graphviz.ExecutableNotFound: the `dot` binary is not installed.
    """
    expand_set = {e.rstrip("/") for e in _names(expand)}
    collapse_set = {c.rstrip("/") for c in _names(collapse)}
    drawn, aux_pairs = _auxiliary(pic, _Writer(pic, collapse_above, expand_set, collapse_set,
                                               rankdir, False, sketch=True), fanout_limit)
    writer = _Writer(drawn, collapse_above, expand_set, collapse_set, rankdir, False)
    dot = writer.write()
    # json0: the layout's attributes without xdot's drawing operations -- a fifth of
    # the bytes for dot to write and for us to parse; everything read here is in it.
    raw = json.loads(dot.pipe(format="json0", encoding="utf-8"))
    x0, y0, x1, y1 = _floats(raw.get("bb", "0,0,0,0"))
    height = y1
    devices = pic.devices()
    dev_index = {d: i for i, d in enumerate(devices)}
    members: dict[str, list[str]] = {}
    for name, nid in writer.node_id.items():
        members.setdefault(nid, []).append(name)

    nodes: list[dict[str, Any]] = []
    clusters: list[dict[str, Any]] = []
    gv_name: dict[int, str] = {}
    for obj in raw.get("objects", []):
        gv_name[obj["_gvid"]] = obj.get("name", "")
        if "bb" in obj:
            cl = _cluster(obj, height)
            if cl is not None:
                clusters.append(cl)
            continue
        nid = obj.get("name", "")
        names = members.get(nid)
        if not names or "pos" not in obj:
            continue
        x, y = _floats(obj["pos"])
        node: dict[str, Any] = {
            "id": nid, "x": round(x), "y": round(height - y),
            "w": round(float(obj.get("width", 0.75)) * 72),
            "h": round(float(obj.get("height", 0.3)) * 72),
            "label": decode_esc(str(obj.get("label") or obj.get("xlabel") or "")).split("\n"),
            "shape": str(obj.get("shape", "box")),
        }
        if nid.startswith("c"):  # a collapsed scope
            scope = _scope_of(decode_esc(str(obj.get("tooltip", ""))))
            devs = {pic.by_name[m].partition or pic.by_name[m].device for m in names} - {""}
            node.update(name=scope, op="", kind="scope",
                        dev=dev_index[next(iter(devs))] if len(devs) == 1 else -1)
        else:
            pn = pic.by_name[names[0]]
            kind = "send" if pn.op in SEND_TYPES else "recv" if pn.op in RECV_TYPES else "op"
            node.update(name=pn.name, op=pn.op, kind=kind,
                        dev=dev_index.get(pn.partition or pn.device, -1))
            if pn.state:
                node["state"] = pn.state
        nodes.append(node)

    edges: list[dict[str, Any]] = []
    for e in raw.get("edges", []):
        src, dst = gv_name.get(e["tail"], ""), gv_name.get(e["head"], "")
        if src not in members or dst not in members or "pos" not in e:
            continue
        style = str(e.get("style", ""))
        color = str(e.get("color", ""))
        if "dashed" in style:
            kind = "c"
        elif color == TRANSFER_COLOR:
            kind = "t" if "bold" in style else "x"
        else:
            kind = "d"
        pts, tip = _spline(e["pos"], height)
        edge: dict[str, Any] = {"src": src, "dst": dst, "kind": kind, "pts": pts}
        if tip is not None:
            edge["tip"] = tip
        if e.get("label"):
            edge["label"] = decode_esc(str(e["label"])).split("\n")
            lx, ly = _floats(e.get("lp", "0,0"))
            edge["lp"] = [round(lx), round(height - ly)]
        if kind == "t":
            edge["key"] = members[dst][0]  # the Recv's name: live bytes find their edge
        elif kind == "x":
            edge["key"] = decode_esc(str(e.get("tooltip", ""))).split(" -> ")[0]
        edges.append(edge)

    aux: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for src, dst, kind in aux_pairs:
        a, b = writer.node_id.get(src), writer.node_id.get(dst)
        if a is None or b is None or a == b or (a, b) in seen:
            continue
        seen.add((a, b))
        aux.append({"src": a, "dst": b, "kind": kind})

    return {
        "v": MODEL_VERSION,
        "title": pic.title,
        "size": [round(x1 - x0), round(y1 - y0)],
        "devices": [[d, short_device(d, devices), PALETTE[i % len(PALETTE)]]
                    for i, d in enumerate(devices)],
        "nodes": nodes,
        "clusters": clusters,
        "edges": edges,
        "aux": aux,
        "members": {nid: names for nid, names in members.items() if nid.startswith("c")},
    }


def _auxiliary(pic: Picture, first: _Writer, limit: int) -> tuple[Picture, list[tuple[str, str, str]]]:
    """The picture to lay out -- `pic` without the edges of its high fan-out sources --
    and those edges as (source op, consumer op, kind) (see `layout`).  `first` is a
    writer of `pic` (not yet written) that says which drawn node each op falls in."""
    first.write()
    where = first.node_id
    fan: dict[str, set[str]] = {}
    for n in pic.nodes:
        dst = where.get(n.name)
        for src in [_src_name(i) for i in n.inputs] + list(n.control_inputs):
            if dst is not None and where.get(src) not in (None, dst):
                fan.setdefault(src, set()).add(dst)
    heavy = {s for s, d in fan.items() if len(d) > limit
             and pic.by_name[s].op not in SEND_TYPES | RECV_TYPES}
    if not heavy:
        return pic, []
    pairs: list[tuple[str, str, str]] = []
    nodes = []
    for n in pic.nodes:
        keep_in = [i for i in n.inputs if _src_name(i) not in heavy]
        keep_ctl = [c for c in n.control_inputs if c not in heavy]
        for i in n.inputs:
            if _src_name(i) in heavy:
                s = pic.by_name[_src_name(i)]
                cross = pic.placed and (s.partition or s.device) != (n.partition or n.device)
                pairs.append((_src_name(i), n.name, "x" if cross else "d"))
        pairs += [(c, n.name, "c") for c in n.control_inputs if c in heavy]
        if len(keep_in) == len(n.inputs) and len(keep_ctl) == len(n.control_inputs):
            nodes.append(n)  # untouched: shared with `pic` (nothing here mutates it)
        else:
            nodes.append(dataclasses.replace(n, inputs=keep_in, control_inputs=keep_ctl))
    frames = {n.name: n.frame for n in pic.nodes}
    drawn = dataclasses.replace(pic, nodes=nodes)
    for n in drawn.nodes:  # frames come from the whole graph, not from what is drawn
        n.frame = frames[n.name]
    return drawn, pairs


def _names(names: Iterable[str]) -> list[str]:
    return [names] if isinstance(names, str) else list(names)


def _scope_of(tooltip: str) -> str:
    """The scope named by a collapsed node's tooltip ("name scope S: 12 ops ...")."""
    first = tooltip.split("\n")[0]
    if first.startswith("name scope "):
        return first[len("name scope "):].rsplit(": ", 1)[0]
    return first


def _cluster(obj: dict[str, Any], height: float) -> dict[str, Any] | None:
    name = str(obj.get("name", ""))
    kinds = {"cluster_p": "partition", "cluster_f": "frame", "cluster_s": "scope"}
    kind = next((k for prefix, k in kinds.items() if name.startswith(prefix)), None)
    if kind is None:  # the legend: the front end draws its own
        return None
    bx0, by0, bx1, by1 = _floats(obj["bb"])
    label = decode_esc(str(obj.get("label", "")))
    tooltip = decode_esc(str(obj.get("tooltip", "")))
    return {
        "x": round(bx0), "y": round(height - by1),
        "w": round(bx1 - bx0), "h": round(by1 - by0),
        "label": label, "kind": kind,
        # scope: its full name; partition: its device; frame: the frame's name
        "name": tooltip if kind != "frame" else label.removeprefix("loop frame "),
        "fill": str(obj.get("fillcolor", "")) if kind == "partition" else "",
    }
