"""GraphView's kernel side, without a browser: the laid-out model agrees with the static
picture, the live bridge batches and throttles, names stay text, the saved state stays
small.  (tests/browser/test_graph_view.py drives the real front end.)"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab import viz
from flowlab.runtime.task.events import ExecEvent
from flowlab.viz.layout import decode_esc, layout
from flowlab.viz.live import LiveBridge
from flowlab.viz.model import from_graph_def
from flowlab.viz.widgets import GraphView, available, summarize

needs_dot = pytest.mark.skipif(not viz.dot_available(), reason="the graphviz `dot` binary is not installed")


def _two_device_step():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.name_scope("layer1"):
            w = fl.Variable(np.ones((3, 4), np.float32), name="w")
            y = fl.nn.relu(fl.matmul(x, w))
        with fl.device("/cpu:1"), fl.name_scope("layer2"):
            z = fl.reduce_sum(y * 2.0, name="sum")
        init = fl.global_variables_initializer()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    sess.run(init)
    return sess, x, z


def test_decode_esc_inverts_the_dot_writers_escaping():
    assert decode_esc(r"a\nb") == "a\nb"
    assert decode_esc(r"c:\\temp") == "c:\\temp"
    assert decode_esc(r"say \"hi\"") == 'say "hi"'


@needs_dot
def test_stages_are_laid_out_with_the_static_pictures_facts():
    sess, x, z = _two_device_step()
    v = GraphView(sess, z, {x: None}, live=False)
    assert v.stage_names == ["full graph", "pruned", "optimized", "placed", "partitioned"]
    assert v.stage == "placed"
    placed = v.layouts["placed"]
    names = {n["name"] for n in placed["nodes"]}
    assert {"layer1/MatMul", "layer2/sum"} <= names
    assert [d[1] for d in placed["devices"]] == ["CPU:0", "CPU:1"]
    assert [e["kind"] for e in placed["edges"]].count("x") == 1  # layer1/Relu -> layer2/mul
    part = v.layouts["partitioned"]
    kinds = {n["kind"] for n in part["nodes"]}
    assert {"send", "recv"} <= kinds
    # The same Send -> Recv edges as the static picture draws (bold red, penwidth 2.5).
    static = viz.graph(sess.partitions(z, {x: None})).source
    assert sum(e["kind"] == "t" for e in part["edges"]) == static.count("penwidth=2.5") >= 1
    assert sorted(c["name"] for c in part["clusters"] if c["kind"] == "partition") == [
        "/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"]
    # Every drawn node carries its side panel; a MatMul's shows dtypes, shapes, placement.
    info = v.info("layer1/MatMul", "placed")
    rows = {(s, k): val for s, k, val in info}
    assert rows[("op", "type")] == "MatMul"
    assert rows[("outputs", "0")] == "layer1/MatMul:0  float32 (?, 4)"
    assert rows[("placement", "device")].endswith("CPU:0")
    assert ("placement", "reason") in rows
    assert any(s == "defined at" and k.startswith("test_graph_view.py:") for s, k, _ in info)
    # The rows are indices into the layout's strings (repeated strings are kept once).
    mm = next(n for n in placed["nodes"] if n["name"] == "layer1/MatMul")
    assert [[placed["strings"][i] for i in row] for row in mm["info"]] == info
    sess.close()


@needs_dot
def test_control_edges_loop_frames_and_collapsed_scopes():
    g = fl.Graph()
    with g.as_default():
        i = fl.constant(0, name="i")
        r = fl.while_loop(lambda i: i < 3, lambda i: i + 1, [i], name="loop")
        with fl.control_dependencies([r]):
            fl.no_op(name="done")
        with fl.name_scope("big"):
            v = fl.constant(1.0)
            for _ in range(12):
                v = v + 1.0
    view = GraphView(g, collapse_above=5)
    m = view.model
    assert any(e["kind"] == "c" for e in m["edges"])
    assert any(c["kind"] == "frame" for c in m["clusters"])
    big = next(n for n in m["nodes"] if n["kind"] == "scope" and n["name"] == "big")
    assert big["label"][0] == "big/"
    view.expand("big")
    assert not any(n["kind"] == "scope" and n["name"] == "big" for n in view.model["nodes"])
    assert any(n["name"] == "big/add" for n in view.model["nodes"])
    view.collapse("big")
    big = next(n for n in view.model["nodes"] if n["kind"] == "scope" and n["name"] == "big")
    assert view.search("BIG/ADD_3") == [big["id"]]  # inside the collapsed scope: its box


@needs_dot
def test_high_fanout_inputs_become_stubs():
    g = fl.Graph()
    with g.as_default():
        w = fl.constant(np.ones((2, 2), np.float32), name="w")
        h = fl.constant(np.ones((1, 2), np.float32), name="h0")
        for t in range(12):
            with fl.name_scope(f"step_{t}"):
                h = fl.tanh(fl.matmul(h, w) + 1.0)
    m = layout(from_graph_def(g.as_graph_def()), collapse_above=2)
    w_id = next(n["id"] for n in m["nodes"] if n["name"] == "w")
    assert len([a for a in m["aux"] if a["src"] == w_id]) == 12
    assert not [e for e in m["edges"] if e["src"] == w_id]
    # Fewer consumers than the limit: ordinary edges.
    m2 = layout(from_graph_def(g.as_graph_def()), collapse_above=2, fanout_limit=20)
    assert not m2["aux"] and [e for e in m2["edges"] if e["src"] == w_id]


@needs_dot
def test_names_are_plain_text_in_the_model():
    evil = '<img src=x onerror=alert(1)> "q" \\n'
    gd = {"node": [{"name": evil, "op": "Const", "attr": {}},
                   {"name": "out", "op": "Identity", "input": [evil], "attr": {}}]}
    v = GraphView(gd)
    m = v.model
    node = next(n for n in m["nodes"] if n["name"] == evil)
    assert node["label"][0] == evil  # decoded back to the text itself, not DOT escapes
    assert ["op", "name", evil] in v.info(evil)


class _FakeSession:
    def __init__(self):
        self.listener = None

    def set_listener(self, listener):
        previous, self.listener = self.listener, listener
        return previous


def _ev(kind, name, step=1, op_type="Add", info=None):
    return ExecEvent(kind, step, name, op_type, "/cpu:0", 0.0, 0, info)


def test_live_bridge_batches_and_throttles():
    sent: list[dict] = []
    sess = _FakeSession()
    previous_calls = []
    keep = previous_calls.append  # a listener already there keeps its events
    sess.listener = keep
    bridge = LiveBridge(sess, sent.append, rate=20, idle_after=0.2, sample=False)
    bridge.start()
    deadline = time.monotonic() + 1.0
    n = 0
    while time.monotonic() < deadline:  # ~1 s of events as fast as they come
        sess.listener(_ev("op_start", f"op{n % 50}", step=n // 50))
        sess.listener(_ev("op_end", f"op{n % 50}", step=n // 50))
        n += 1
    time.sleep(0.5)
    bridge.stop()
    assert sess.listener is keep  # put back as it was
    assert len(previous_calls) == 2 * n
    live = [m for m in sent if not m["idle"]]
    # 20 a second at most, however many events. How many fewer depends on how often the
    # flusher got the GIL from the tight loop above (twice in a loaded CI run), so only
    # the bound is checked; the update after the loop always comes.
    assert 1 <= len(live) <= 23, len(live)
    assert n > 1000
    assert sent[-1]["idle"] and sent[-1]["run"] == []
    assert set().union(*(m["done"] for m in live)) == {f"op{k}" for k in range(50)}
    assert live[-1]["steps"] >= n // 50


def test_live_bridge_watches_about_one_fast_step_per_update():
    sess = _FakeSession()
    bridge = LiveBridge(sess, lambda m: None, rate=20)
    bridge.start()
    ours = sess.listener
    watched = steps = 0
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # 1 s of 3-op steps, as fast as they come
        listener = sess.listener
        watched += listener is ours
        for name in ("a", "b", "c"):
            if listener is not None:
                listener(_ev("op_start", name, step=steps))
                listener(_ev("op_end", name, step=steps))
        steps += 1
    bridge.stop()
    assert sess.listener is None
    # At most about one watched step per update; at least the first (how many more
    # depends on how often the flusher got the GIL from the loop).
    assert steps > 2000 and 1 <= watched <= 2 * 20 + 2, (steps, watched)


def test_live_bridge_counts_recv_bytes_and_takes_records():
    sess = _FakeSession()
    bridge = LiveBridge(sess, lambda m: None)
    bridge.listen(_ev("op_start", "r", op_type="_Recv"))
    bridge.listen(_ev("op_end", "r", op_type="_Recv", info=[np.zeros(6, np.float32)]))
    msg = bridge.fold(bridge.pending)
    assert msg["bytes"] == {"r": 24} and msg["done"] == ["r"] and msg["run"] == []


@needs_dot
def test_live_updates_reach_every_stage_from_real_steps():
    sess, x, z = _two_device_step()
    v = GraphView(sess, z, {x: None})
    sent: list[dict] = []
    got = threading.Event()

    def capture(msg, buffers=None):
        sent.append(msg)
        if msg.get("idle"):
            got.set()

    v.send = capture
    for _ in range(3):
        sess.run(z, {x: np.ones((2, 3), np.float32)})
    assert got.wait(5)
    v.stop()
    assert sess.listener is None
    live = [m for m in sent if not m["idle"]]
    placed = v.layouts["placed"]
    mm = next(n["id"] for n in placed["nodes"] if n["name"] == "layer1/MatMul")
    assert any(mm in m["stages"].get("placed", {}).get("done", []) for m in live)
    part_bytes = [m["stages"]["partitioned"]["xfer"] for m in live if "partitioned" in m["stages"]]
    assert any(part_bytes), "the Send/Recv edge carried no bytes"
    placed_bytes = [m["stages"]["placed"]["xfer"] for m in live if "placed" in m["stages"]]
    assert any(placed_bytes), "the placed stage's cross-device edge carried no bytes"
    sess.close()


@needs_dot
def test_saved_state_of_a_2000_op_graph_is_small():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 8], name="x")
        h = fl.zeros([1, 8])
        c = fl.zeros([1, 8])
        W = fl.Variable(np.ones((16, 32), np.float32) * 0.01, name="W")
        for t in range(140):
            with fl.name_scope(f"step_{t}"):
                i, f, o, u = fl.split(fl.matmul(fl.concat([x, h], 1), W), 4, axis=1)
                c = fl.sigmoid(f) * c + fl.sigmoid(i) * fl.tanh(u)
                h = fl.sigmoid(o) * fl.tanh(c)
    assert len(g.get_operations()) > 1900
    t0 = time.perf_counter()
    v = GraphView(g)
    took = time.perf_counter() - t0
    size = len(json.dumps(v.get_state()))
    assert size < 100_000, size
    assert took < 10, took  # ~0.2 s alone; generous for a loaded machine
    for k in (10, 70, 130):  # opened scopes add their ops and edges, and it stays small
        v.expand(f"step_{k}")
    opened = len(json.dumps(v.get_state()))
    assert size < opened < 100_000, opened
    assert "step_70/MatMul" in {n["name"] for n in v.model["nodes"]}


def test_summary_and_availability():
    assert summarize(np.array([1.0, np.nan, 3.0])) == (
        "shape (3,) float64  min 1 max 3 mean 2  nan 1 inf 0")
    assert summarize(np.array(b"ab")).startswith("shape () |S2")
    assert available() is False  # not inside a Jupyter kernel
