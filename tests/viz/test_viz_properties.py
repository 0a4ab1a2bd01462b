"""Property tests of the DOT writer over random GraphDefs: every op is drawn exactly
once (or inside one collapsed scope), every edge joins drawn nodes, and `dot` accepts
the text whatever the names are."""

from __future__ import annotations

import re
import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowlab import viz
from flowlab.viz import model

SEGMENT = st.text(alphabet="ab<>\\\"{}; x-", min_size=1, max_size=4)
OPS = st.sampled_from(["Const", "Add", "Enter", "Exit", "Merge", "NextIteration", "_Send", "_Recv", "NoOp"])
DEVICES = st.sampled_from(["", "/job:w/replica:0/task:0/device:CPU:0", "/job:w/replica:0/task:1/device:CPU:0"])


@st.composite
def graph_defs(draw):
    n = draw(st.integers(1, 25))
    names: list[str] = []
    nodes = []
    for _ in range(n):
        parts = draw(st.lists(SEGMENT, min_size=1, max_size=3))
        name = "/".join(parts)
        if name in names:
            name = f"{name}_{len(names)}"
        inputs = []
        if names:
            for src in draw(st.lists(st.sampled_from(names), max_size=3)):
                inputs.append(draw(st.sampled_from([src, f"{src}:1", f"^{src}"])))
        op = draw(OPS)
        attr = {}
        if op == "Enter":
            attr["frame_name"] = {"s": draw(SEGMENT)}
        if op in ("_Send", "_Recv"):
            attr["tensor_name"] = {"s": draw(st.sampled_from(["t0", "t1"]))}
            attr["recv_device"] = {"s": "/job:w/replica:0/task:1/device:CPU:0"}
        nodes.append({"name": name, "op": op, "input": sorted(inputs, key=lambda i: i.startswith("^")),
                      "device": draw(DEVICES), "attr": attr})
        names.append(name)
    return {"node": nodes}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_defs(), st.integers(1, 50))
def test_every_op_is_drawn_once_and_edges_join_drawn_nodes(gd, collapse_above):
    dot = viz.graph(gd, collapse_above=collapse_above)
    src = dot.source
    declared = re.findall(r"^\s*([ncl]\d+) \[", src, flags=re.M)
    assert len(declared) == len(set(declared))
    for a, b in re.findall(r"^\s*([ncl]\d+) -> ([ncl]\d+)", src, flags=re.M):
        assert a in declared and b in declared
    if collapse_above >= len(gd["node"]):
        ops = [ln for ln in declared if ln.startswith("n")]
        assert len(ops) == len(gd["node"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_defs())
def test_dot_accepts_any_names(gd):
    if not viz.dot_available():
        return
    src = viz.graph(gd).source
    done = subprocess.run(["dot", "-Tsvg"], input=src.encode(), capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()[:500]
    assert b"syntax error" not in done.stderr


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_defs())
def test_frames_follow_enter_and_exit(gd):
    pic = model.from_graph_def(gd)
    for n in pic.nodes:
        if n.op == "Enter":
            assert n.frame and n.frame[-1] == n.attrs["frame_name"]
        else:
            srcs = [model._src_name(i) for i in n.inputs] + n.control_inputs
            known = [pic.by_name[s] for s in srcs if s in pic.by_name]
            if not known:
                assert n.frame == ()
