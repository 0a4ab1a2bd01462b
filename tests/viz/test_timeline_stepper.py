"""TimelineView, StepperView and GraphView.mark on the kernel side, without a browser
(tests/browser/test_timeline_stepper.py drives the front end): the timeline model
carries the trace's facts, the Stepper's buttons run the real Stepper, the inspector's
numbers match NumPy, the graph's marks follow the step."""

from __future__ import annotations

import json

import numpy as np
import pytest

import flowlab as fl
from flowlab import viz
from flowlab.profiler.trace import OpRecord, OutputRecord, Trace
from flowlab.viz.stepper import StepperView, inspect_value
from flowlab.viz.timeline import DEAD, WAIT, TimelineView, as_trace, timeline_model
from flowlab.viz.widgets import GraphView

needs_dot = pytest.mark.skipif(not viz.dot_available(), reason="the graphviz `dot` binary is not installed")


def _step(log_of_negative: bool = True):
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.name_scope("layer1"):
            w = fl.Variable(np.ones((3, 4), np.float32), name="w")
            y = fl.nn.relu(fl.matmul(x, w))
        with fl.device("/cpu:1"), fl.name_scope("layer2"):
            z = fl.reduce_sum(fl.log(y - (3.0 if log_of_negative else 0.0)), name="sum")
        init = fl.global_variables_initializer()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    sess.run(init)
    return sess, z, {x: np.ones((2, 3), np.float32)}


def _profile(sess, z, feed, steps=3):
    with fl.profile(sess) as prof:
        for _ in range(steps):
            sess.run(z, feed)
    return prof


# --- the timeline -----------------------------------------------------------------------
def test_timeline_model_holds_every_op_run_lane_and_transfer():
    sess, z, feed = _step()
    prof = _profile(sess, z, feed)
    trace = prof.trace
    m = timeline_model(trace)
    assert [s[0] for s in m["steps"]] == trace.steps and [s[3] for s in m["steps"]] == [1, 2, 3]
    assert len(m["ops"]) == len(trace.ops)
    assert [d[1] for d in m["devices"]] == ["CPU:0", "CPU:1"]
    assert {lane[0] for lane in m["lanes"]} == {0, 1}
    by_name: dict[str, list] = {}
    for row in m["ops"]:
        by_name.setdefault(m["names"][row[4]], []).append(row)
    assert len(by_name["layer1/MatMul"]) == 3
    # Times are relative to the step's start and match the records.
    for sid, (_, start, dur, _) in zip(trace.steps, m["steps"], strict=True):
        recs = trace.step(sid).ops
        assert start == pytest.approx(min(r.start_us for r in recs), abs=0.01)
        assert dur == pytest.approx(max(r.end_us for r in recs) - start, abs=0.02)
    mm = next(r for r in trace.ops if r.name == "layer1/MatMul")
    row = by_name["layer1/MatMul"][0]
    assert m["types"][row[5]] == "MatMul" and row[3] == pytest.approx(mm.duration_us, abs=0.01)
    assert row[7] == "0: float32 (2, 4) 32 B"
    recv = by_name["layer1/Relu/_1"][0]
    assert recv[6] & WAIT
    # One flow per step: Send row -> Recv row, with the bytes and the tensor.
    assert len(m["flows"]) == 3
    send_row, recv_row, nbytes, tensor = m["flows"][0]
    assert m["types"][m["ops"][send_row][5]] == "_Send" and m["types"][m["ops"][recv_row][5]] == "_Recv"
    assert (nbytes, tensor) == (32, "layer1/Relu:0")
    json.dumps(m)  # plain JSON


def test_timeline_steps_and_errors():
    sess, z, feed = _step()
    trace = _profile(sess, z, feed, steps=4).trace
    assert [s[0] for s in timeline_model(trace, max_steps=2)["steps"]] == trace.steps[-2:]
    assert [s[3] for s in timeline_model(trace, steps=[trace.steps[0]])["steps"]] == [1]
    with pytest.raises(ValueError, match="The trace has no step 7; its steps: "):
        timeline_model(trace, steps=[7])
    with pytest.raises(TypeError, match="TimelineView needs a trace: .* not int"):
        as_trace(3)
    with pytest.raises(TypeError, match="links with a flowlab.viz.GraphView, not str"):
        TimelineView(trace, graph="view")


def test_timeline_of_run_metadata_and_dead_ops_and_perfetto(tmp_path):
    sess, z, feed = _step()
    md = fl.RunMetadata()
    sess.run(z, feed, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    view = TimelineView(md)
    assert len(view.timeline["steps"]) == 1 and view.timeline["flows"]
    path = view.to_chrome(str(tmp_path / "t.json"))
    events = json.loads(open(path).read())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == len(view.trace.ops)
    dead = Trace([OpRecord("a", "Switch", "/device:CPU:0", "", 1, 0.0, 2.0, dead=True,
                           outputs=(OutputRecord(0, (2,), "float32", 8),))])
    row = timeline_model(dead)["ops"][0]
    assert row[6] & DEAD and row[7] == "0: float32 (2,) 8 B"


@needs_dot
def test_timeline_links_with_a_graph_view_in_its_state():
    sess, z, feed = _step()
    gv = GraphView(sess, z, feed, live=False)
    tv = TimelineView(_profile(sess, z, feed), graph=gv)
    state = tv.get_state()
    assert state["graph"] == f"IPY_MODEL_{gv.model_id}"
    assert len(json.dumps(state["timeline"])) < 20_000


# --- the stepper ------------------------------------------------------------------------
def test_inspect_value_matches_numpy():
    a = np.array([[1.0, np.nan, 3.0], [np.inf, -2.0, 5.0]], np.float32)
    v = inspect_value("t:0", a)
    finite = np.array([1.0, 3.0, -2.0, 5.0])
    assert (v["shape"], v["dtype"], v["nan"], v["inf"]) == ("(2, 3)", "float32", 1, 1)
    assert (v["min"], v["max"], v["mean"]) == ("-2", "5", f"{finite.mean():.6g}")
    counts, _ = np.histogram(finite, bins=20, range=(-2.0, 5.0))
    assert v["hist"] == counts.tolist() and v["edges"] == [-2.0, 5.0]
    assert "nan" in v["values"] and "inf" in v["values"]
    big = inspect_value("b:0", np.arange(200.0).reshape(10, 20))
    assert big["slice"] == "[:6, :6]" and "105." in big["values"] and "106" not in big["values"]
    assert inspect_value("d:0", fl.debug.DEAD)["note"].startswith("dead")
    assert inspect_value("s:0", np.float32(2.5))["values"] == "2.5"


@needs_dot
def test_stepper_view_commands_run_the_stepper_and_mark_the_graph():
    sess, z, feed = _step()
    sv = StepperView(sess, z, feed)
    st = sv.stepper
    s = sv.panel.state
    assert (s["status"], s["ran"], s["total"]) == ("running", 0, len(st.ops()))
    assert [r[0] for r in s["ready"]] == ["CPU:0", "CPU:1"]
    assert s["waiting"] == [["layer1/Relu/_1", "layer1/Relu/_0"]]
    marks = sv.graph_view.marks["step"]
    id_of = sv.graph_view._maps["step"][0]
    assert marks[id_of["layer1/w"]] == "next"

    sv._on_msg(None, {"t": "step", "n": 3}, None)  # what the "step n" button sends
    assert sv.panel.state["ran"] == 3 == len(st.ran())
    assert sv.graph_view.marks["step"][id_of[st.ran()[0]]] == "done"

    sv._on_msg(None, {"t": "break", "name": "layer2/sum"}, None)
    assert sv.panel.state["breakpoints"] == ["layer2/sum"]
    assert sv.graph_view.marks["step"][id_of["layer2/sum"]] == "break"
    sv._on_msg(None, {"t": "nan", "on": True}, None)
    sv._on_msg(None, {"t": "continue"}, None)
    s = sv.panel.state
    assert s["stop_kind"] == "nan_or_inf" and "'layer2/Log'" in s["stop"] and "8 Inf" in s["stop"]
    assert s["inspect"]["tensor"] == "layer2/Log:0" and s["inspect"]["inf"] == 8
    assert sv.graph_view.marks["step"][id_of["layer2/Log"]] == "stopped"

    sv._on_msg(None, {"t": "run_to", "name": "layer1/MatMul"}, None)  # ran already
    assert "has already run" in sv.panel.state["error"]
    sv._on_msg(None, {"t": "inspect", "name": "layer1/Relu"}, None)
    assert sv.panel.state["inspect"]["max"] == "3" and sv.panel.state["error"] == ""

    sv.continue_()
    assert sv.panel.state["stop_kind"] == "breakpoint"
    sv.toggle_breakpoint("layer2/sum")
    assert sv.panel.state["breakpoints"] == []
    sv.continue_()
    assert sv.panel.state["status"] == "finished"
    assert st.result() == -np.inf


@needs_dot
def test_stepper_view_abort_and_errors():
    sess, z, feed = _step(log_of_negative=False)
    sv = StepperView(sess, z, feed)
    sv.run_to("layer1/Relu")
    assert sv.panel.state["stop_kind"] == "run_to" and sv.panel.state["inspect"]["tensor"] == "layer1/Relu:0"
    sv.toggle_breakpoint("nope")
    assert sv.panel.state["error"] == "No op named 'nope' in the graph."
    sv.abort()
    assert sv.panel.state["status"] == "aborted"
    with pytest.raises(fl.errors.CancelledError):
        sv.stepper.result()
    with pytest.raises(TypeError, match="needs a flowlab.debug.Stepper or a Session, not int"):
        StepperView(3)
    with pytest.raises(ValueError, match="give the fetches"):
        StepperView(sess)


@needs_dot
def test_graph_view_marks_collapsed_scopes_by_their_most_telling_state():
    sess, z, feed = _step()
    gv = GraphView(sess, z, feed, live=False, collapse=["layer1"], stage="placed")
    scope_id = gv._maps["placed"][0]["layer1/MatMul"]
    gv.mark({"layer1/w": "done", "layer1/MatMul": "next"})
    assert gv.marks["placed"][scope_id] == "next"
    ops = [n for n, i in gv._maps["placed"][0].items() if i == scope_id]
    gv.mark(dict.fromkeys(ops, "done"))
    assert gv.marks["placed"][scope_id] == "done"
    gv.expand("layer1")  # the marks follow the new layout
    assert gv.marks["placed"][gv._maps["placed"][0]["layer1/MatMul"]] == "done"
    with pytest.raises(ValueError, match="unknown state 'lit'"):
        gv.mark({"layer1/w": "lit"})


# --- placement you can try --------------------------------------------------------------
@needs_dot
def test_place_moves_an_op_replaces_the_step_and_puts_it_back():
    sess, z, feed = _step(log_of_negative=False)
    gv = GraphView(sess, z, feed, live=False)
    cpu1 = "/job:localhost/replica:0/task:0/device:CPU:1"
    assert gv.device_names == ["/job:localhost/replica:0/task:0/device:CPU:0", cpu1]

    def pairs():
        return sorted(n["name"] for n in gv.layouts["partitioned"]["nodes"] if n["kind"] in ("send", "recv"))

    before, predicted = pairs(), gv.timing["predicted_us"]
    assert predicted > 0 and gv.timing["moved"] == []
    gv._on_msg(None, {"t": "place", "name": "layer1/MatMul", "device": cpu1}, None)
    assert sess.placement(z, feed).device_of["layer1/MatMul"].name == cpu1
    assert len(pairs()) > len(before) and gv.timing["moved"] == [["layer1/MatMul", cpu1]]
    assert gv.timing["predicted_us"] != predicted
    assert ["placement", "device", cpu1] in gv.info("layer1/MatMul", "placed")
    np.testing.assert_allclose(sess.run(z, feed), 8 * np.log(3.0), rtol=1e-6)  # runs as placed
    gv.place("layer1", None)  # a scope: every op back to its own request
    assert pairs() == before and gv.timing == {"moved": [], "predicted_us": predicted}


@needs_dot
def test_place_errors_leave_the_step_as_it_was():
    sess, z, feed = _step(log_of_negative=False)
    gv = GraphView(sess, z, feed, live=False)
    before = gv.layouts
    with pytest.raises(fl.errors.InvalidArgumentError, match="layer1/MatMul.*GPU:0"):
        gv.place("layer1/MatMul", "/device:GPU:0")
    assert sess.graph.get_operation_by_name("layer1/MatMul").device == ""
    assert gv.layouts == before
    gv._on_msg(None, {"t": "place", "name": "layer1/MatMul", "device": "/device:GPU:0"}, None)
    assert gv.timing["error"].startswith("InvalidArgumentError: Cannot assign a device for operation layer1/MatMul")
    with pytest.raises(ValueError, match="no op named 'nope' or in name scope 'nope/'"):
        gv.place("nope", None)
    with pytest.raises(ValueError, match="needs the view of a session's step"):
        GraphView(sess.graph, live=False).place("layer1/MatMul", None)


def test_live_bridge_measures_the_watched_step():
    sess, z, feed = _step(log_of_negative=False)
    from flowlab.runtime.task.events import ExecEvent
    from flowlab.viz.live import LiveBridge

    bridge = LiveBridge(sess, lambda m: None)
    for kind, t in (("op_start", 100.0), ("op_end", 150.0), ("op_start", 160.0), ("op_end", 400.5)):
        bridge.listen(ExecEvent(kind, 7, "a", "Const", "/device:CPU:0", t, 1))
    assert bridge.fold(bridge.pending)["step_us"] == 300.5


@needs_dot
def test_opening_a_scope_sends_that_stage_alone():
    sess, z, feed = _step(log_of_negative=False)
    gv = GraphView(sess, z, feed, live=False, collapse=["layer1"])
    sent: list = []
    # What would go to the browser: every message passes Widget._send (a comm's own send
    # is skipped when the comm has no kernel, as once ipykernel has been imported).
    gv._send = lambda msg, buffers=None: sent.append(msg)
    gv.expand("layer1", "placed")
    layouts = [m["state"] for m in sent if m.get("method") == "update" and "layouts" in m["state"]]
    custom = [m["content"] for m in sent if m.get("method") == "custom"]
    assert layouts == []
    assert [c["t"] for c in custom] == ["layout"] and custom[0]["stage"] == "placed"
    assert custom[0]["layout"] == gv.layouts["placed"]
    assert "layer1/MatMul" in {n["name"] for n in gv.layouts["placed"]["nodes"]}
    assert "layer1/MatMul" not in {n["name"] for n in gv.layouts["partitioned"]["nodes"]}
