"""flowlab.profiler: Trace records, transfers, memory, critical path, summaries,
Chrome export, plots, HTML, and fl.profile(sess)."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest

import flowlab as fl
from flowlab.profiler import Trace
from flowlab.runtime.config import (
    AllocationDescription,
    DeviceStepStats,
    NodeExecStats,
    NodeOutput,
    StepStats,
    TensorDescription,
    TensorShapeDim,
    TensorShapeProto,
)

matplotlib.use("Agg")

FULL = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)
TASK = "/job:localhost/replica:0/task:0"
CPU0, CPU1 = TASK + "/device:CPU:0", TASK + "/device:CPU:1"


# --- a hand-made two-device step: a -> _Send ~> _Recv -> b (known times) -------------
def _ns(name, op_type, start_us, dur_us, thread, inputs=(), out_shape=None, attrs=None, step=7):
    out = []
    if out_shape is not None:
        nbytes = 4 * int(np.prod(out_shape))
        out = [NodeOutput(slot=0, tensor_description=TensorDescription(
            dtype=fl.float32, shape=TensorShapeProto(dim=[TensorShapeDim(size=s) for s in out_shape]),
            allocation_description=AllocationDescription(requested_bytes=nbytes)))]
    return NodeExecStats(
        node_name=name, op_type=op_type, all_start_micros=start_us, all_start_nanos=start_us * 1000,
        op_end_rel_micros=dur_us, all_end_rel_micros=dur_us, all_end_rel_nanos=dur_us * 1000,
        thread_id=thread, inputs=list(inputs), output=out, attrs=attrs or {}, step_id=step,
        task=TASK,
    )


def _two_device_stats(name_a="a"):
    addr = {"tensor_name": "edge_1_a", "send_device": CPU0, "recv_device": CPU1,
            "send_device_incarnation": 1}
    return StepStats(dev_stats=[
        DeviceStepStats(device=CPU0, thread_names={11: "exec-0"}, node_stats=[
            _ns(name_a, "Const", 100, 10, 11, out_shape=(10,)),
            _ns("a/_send", "_Send", 112, 3, 11, inputs=[f"{name_a}:0"], attrs=addr),
            _ns("c", "Square", 115, 5, 11, inputs=[f"{name_a}:0"], out_shape=(10,)),
        ]),
        DeviceStepStats(device=CPU1, thread_names={22: "exec-1"}, node_stats=[
            _ns("a/_recv", "_Recv", 101, 20, 22, out_shape=(10,), attrs=addr),
            _ns("b", "Neg", 125, 10, 22, inputs=["a/_recv:0"], out_shape=(10,)),
            _ns("dead_one", "Neg", 136, 0, 22, inputs=["a/_recv:0"]),
        ]),
    ])


def _with_dead(stats):
    stats.dev_stats[1].node_stats[2].dead = True
    return stats


def test_records_and_transfer_pairing():
    tr = Trace.from_step_stats(_with_dead(_two_device_stats()))
    assert tr.devices == [CPU0, CPU1]
    assert tr.steps == [7]
    assert [r.name for r in tr.ops][:2] == ["a", "a/_recv"]  # sorted by start
    a = tr.op("a")[0]
    assert (a.start_us, a.end_us, a.duration_us, a.bytes) == (100.0, 110.0, 10.0, 40)
    assert a.outputs[0].shape == (10,) and a.outputs[0].dtype == "float32"
    assert a.task == TASK and a.device == CPU0 and a.thread == 11
    (t,) = tr.transfers
    assert (t.tensor_name, t.src_device, t.dst_device) == ("edge_1_a", CPU0, CPU1)
    assert t.tensor == "a:0"  # what the pair carries, as the user named it
    assert t.src_task == t.dst_task == TASK
    assert t.bytes == 40
    assert t.wait_us == 20.0  # Recv start (101) -> value available (121)
    assert t.latency_us == 9.0  # Send start (112) -> 121
    assert tr.bytes_moved == 40
    assert [r.name for r in tr.dead_ops] == ["dead_one"]
    assert tr.threads(CPU1) == [22]


def test_memory_counts_live_outputs_until_last_reader():
    tr = Trace.from_step_stats(_two_device_stats())
    # CPU:0: a (40 B) lives 110 -> 120 (c, its last reader, ends at 120); c (40 B, no
    # reader) lives from 120 to the step's end (136).
    m0 = [(s.time_us, s.bytes) for s in tr.memory[CPU0]]
    assert m0 == [(110.0, 40), (120.0, 40), (136.0, 0)]
    assert tr.peak_memory(CPU0) == 40
    # CPU:1: the Recv's 40 B from 121 until its last reader ends (136), b's output from
    # 135 until the end.
    m1 = [(s.time_us, s.bytes) for s in tr.memory[CPU1]]
    assert m1 == [(121.0, 40), (135.0, 80), (136.0, 0)]
    # A dead op reads nothing: with it dead, the Recv's output is freed when b ends.
    dead = Trace.from_step_stats(_with_dead(_two_device_stats()))
    assert [(s.time_us, s.bytes) for s in dead.memory[CPU1]] == [(121.0, 40), (135.0, 40), (136.0, 0)]


def test_critical_path_follows_send_to_recv():
    tr = Trace.from_step_stats(_with_dead(_two_device_stats()))
    path = tr.critical_path()
    # b ended last; it waited for the Recv, which waited for the Send, which read a.
    assert [r.name for r in path] == ["a", "a/_send", "a/_recv", "b"]


def test_summary_tables_and_repr():
    tr = Trace.from_step_stats(_two_device_stats())
    s = tr.summary()
    devs = s.devices.to_records()
    assert [d["device"] for d in devs] == ["CPU:0", "CPU:1"]  # as the other tables name them
    # Span 100..136 = 36 us; CPU:0 busy 100-110, 112-120 = 18 us; CPU:1's Recv is a wait,
    # so only b (10 us) and the 0-length dead op... which is left out.
    assert devs[0]["busy_us"] == pytest.approx(18.0)
    assert devs[0]["busy_fraction"] == pytest.approx(18.0 / 36.0)
    assert devs[1]["busy_us"] == pytest.approx(10.0)
    assert devs[0]["peak_bytes"] == 40
    (row,) = s.transfers.to_records()
    assert (row["src"], row["dst"], row["count"], row["bytes"], row["wait_us"]) == ("CPU:0", "CPU:1", 1, 40, 20.0)
    assert s.top_ops.column("op")[0] == "a/_recv"
    text = repr(s)
    assert "Top ops by total time" in text and "Critical path of step 7" in text
    assert "CPU:0" in text and "edge" not in text.split("Transfers")[0]


def test_counts_agree_with_their_nouns():
    from flowlab.profiler.trace import plural

    assert (plural(1, "transfer"), plural(3, "transfer"), plural(1024, "byte")) == (
        "1 transfer", "3 transfers", "1,024 bytes")
    tr = Trace.from_step_stats(_two_device_stats())
    header = tr.summary().header
    assert header.startswith("1 step, median ") and "; 1 transfer moving 40 bytes;" in header
    assert "0 dead ops; 0 queue waits" in header and "(s)" not in repr(tr)
    assert repr(tr).startswith("<Trace 1 step, 6 op executions on 2 devices, 1 transfer, ")
    assert tr.plot().axes[0].get_title().startswith("1 step, 6 ops, 1 transfer (40 B)")


def _dominated_stats():
    """A step where one tiny MatMul takes 53.7 ms of a 55.3 ms step (a busy machine)."""
    small = dict(out_shape=(2, 2))
    return StepStats(dev_stats=[DeviceStepStats(device=CPU0, thread_names={1: "exec"}, node_stats=[
        _ns("x", "Const", 0, 40, 1, **small),
        _ns("w", "Const", 50, 30, 1, **small),
        _ns("mm", "MatMul", 100, 53_700, 1, inputs=["x:0", "w:0"], **small),
        _ns("relu", "Relu", 53_900, 60, 1, inputs=["mm:0"], **small),
        _ns("sum", "Sum", 54_000, 1_300, 1, inputs=["relu:0"], out_shape=()),
    ])])


def test_a_small_op_dominating_a_step_gets_a_note():
    tr = Trace.from_step_stats(_dominated_stats())
    tr.machine_load = (0.2, 2)  # a quiet machine: only the op's note
    s = tr.summary()
    assert len(s.notes) == 1
    (note,) = s.notes
    assert note.startswith("in step 7, MatMul 'mm' took 53.7 ms of the step's 55.3 ms, ")
    assert "for 16 bytes of output" in note and "machine was probably busy" in note
    assert "fl.profile(sess)" in note
    assert "Note: in step 7, MatMul 'mm'" in repr(s) and "<b>Note:</b> in step 7" in s._repr_html_()
    calm = Trace.from_step_stats(_two_device_stats())
    calm.machine_load = (0.2, 2)
    assert calm.summary().notes == []


def test_a_busy_machine_gets_a_note():
    tr = Trace.from_step_stats(_two_device_stats())
    load = tr.machine_load
    assert load is None or (load[0] >= 0 and load[1] >= 1)  # read when the trace was built
    tr.machine_load = (3.5, 2)
    assert tr.summary().notes == [
        "the machine was busy when this trace was read: load average 3.5 on 2 CPUs, so op "
        "times include waiting for a CPU. Compare runs made on a quiet machine, or trace "
        "several steps and read the medians."
    ]


def test_the_gantt_figure_has_room_for_its_legend():
    import warnings

    x = fl.placeholder(fl.float32, [None, 4], name="x")
    h = x
    for op in (fl.nn.relu, fl.square, fl.exp, fl.tanh, fl.sigmoid, fl.abs, fl.negative, fl.sqrt,
               fl.log1p, fl.sin, fl.cos, fl.floor):
        h = op(h)
    md = fl.RunMetadata()
    with fl.Session() as s:
        s.run(h, {x: np.ones((2, 4))}, options=FULL, run_metadata=md)
    fig = Trace.from_run_metadata(md).plot(memory=False)  # one lane, 12 op types in the legend
    assert fig.get_figheight() >= 1.2 + 0.22 * 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied ..." would raise
        fig._repr_png_()


def test_the_gantt_figure_draws_itself_in_a_notebook():
    from IPython.core.formatters import DisplayFormatter

    fig = Trace.from_step_stats(_two_device_stats()).plot()
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    data, _ = DisplayFormatter().format(fig)  # what a notebook shows for `trace.plot()`
    assert data["image/png"] == png or data["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert fig.get_figwidth() <= 10  # fits a notebook's output area at 100 dpi


def test_html_escapes_names():
    tr = Trace.from_step_stats(_two_device_stats(name_a="<b>x&y</b>"))
    h = tr._repr_html_()
    assert "<b>x&y</b>" not in h
    assert "&lt;b&gt;x&amp;y&lt;/b&gt;" in h
    assert "<table>" in h
    # The SVG timeline: one rect per op, one line per transfer, names in escaped titles.
    import xml.etree.ElementTree as ET

    svg = h[h.index("<svg"):h.index("</svg>") + 6]
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}rect")) == len(tr.ops)
    assert len(root.findall(f"{ns}line")) == 1
    titles = [t.text for t in root.iter(f"{ns}title")]
    assert any(t.startswith("<b>x&y</b> (Const)") for t in titles)


def test_chrome_export_lanes_flows_bytes_counters(tmp_path):
    tr = Trace.from_step_stats(_two_device_stats())
    path = tr.to_chrome(str(tmp_path / "t.json"))
    doc = json.loads(open(path).read())
    ev = doc["traceEvents"]
    # Every event has what the trace event format requires of its phase.
    for e in ev:
        assert e["ph"] in ("M", "X", "s", "f", "C") and isinstance(e["pid"], int)
        assert isinstance(e["tid"], int) and isinstance(e["name"], str)
        if e["ph"] != "M":
            assert e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["args"], dict)
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(procs.values()) == [CPU0, CPU1]
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert len(lanes) == 2 and any("exec-0" in v for v in lanes.values())
    xs = {e["name"]: e for e in ev if e["ph"] == "X"}
    assert set(xs) == {"a", "a/_send", "c", "a/_recv", "b", "dead_one"}
    assert xs["a"]["ts"] == 0.0 and xs["a"]["dur"] == 10.0 and xs["a"]["args"]["bytes"] == 40
    assert xs["a"]["args"]["output0"] == "float32[10] 40 B"
    assert xs["a"]["pid"] != xs["b"]["pid"]
    s = [e for e in ev if e["ph"] == "s"]
    f = [e for e in ev if e["ph"] == "f"]
    assert len(s) == len(f) == 1 and s[0]["id"] == f[0]["id"] and f[0]["bp"] == "e"
    # Each end of the flow lies inside its op's slice on its op's lane.
    for flow, op in ((s[0], xs["a/_send"]), (f[0], xs["a/_recv"])):
        assert (flow["pid"], flow["tid"]) == (op["pid"], op["tid"])
        assert op["ts"] <= flow["ts"] <= op["ts"] + op["dur"]
    assert f[0]["args"]["bytes"] == 40
    counters = [e for e in ev if e["ph"] == "C"]
    assert counters and all(e["name"] == "memory" for e in counters)
    assert max(e["args"]["bytes_in_use"] for e in counters if e["pid"] == xs["a"]["pid"]) == 40


def test_plot_returns_figure_with_arrows():
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

    tr = Trace.from_step_stats(_with_dead(_two_device_stats()))
    fig = tr.plot()
    assert isinstance(fig, Figure)
    gantt = fig.axes[0]
    assert [t.get_text() for t in gantt.get_yticklabels()] == ["CPU:0", "CPU:1"]
    assert len([c for c in gantt.get_children() if isinstance(c, Annotation)]) == 1
    assert len(fig.axes) >= 2  # the memory panel
    fig.canvas.draw()  # renders without error under Agg


# --- traced steps of real graphs ------------------------------------------------------
def test_trace_of_a_real_step():
    x = fl.placeholder(fl.float32, [None, 4], name="x")
    w = fl.constant(np.ones((4, 3), np.float32), name="w")
    h = fl.nn.relu(fl.matmul(x, w, name="mm"), name="h")
    y = fl.reduce_sum(h, name="y")
    md = fl.RunMetadata()
    with fl.Session() as s:
        s.run(y, {x: np.ones((5, 4))}, options=FULL, run_metadata=md)
    tr = Trace.from_run_metadata(md)
    assert {r.name for r in tr.ops} >= {"w", "mm", "h", "y"}
    mm = tr.op("mm")[0]
    assert mm.outputs[0].shape == (5, 3) and mm.bytes == 60
    assert [r.name for r in tr.critical_path()][-3:] == ["mm", "h", "y"]
    assert tr.peak_memory(tr.devices[0]) >= 60
    json.dumps(tr.chrome_trace())
    fig = tr.plot()
    assert fig.axes


def test_queue_waits():
    q = fl.FIFOQueue(4, [fl.float32], shapes=[[2]], name="q")
    enq = q.enqueue([fl.constant([1.0, 2.0])], name="enq")
    deq = q.dequeue(name="deq")
    with fl.Session() as s:
        with fl.profile(s) as prof:
            s.run(enq)
            np.testing.assert_array_equal(s.run(deq), [1.0, 2.0])
    waits = prof.trace.queue_waits
    assert {r.op_type for r in waits} == {"QueueEnqueueV2", "QueueDequeueV2"}
    assert all(r.duration_us >= 0 for r in waits)
    assert "2 queue waits" in repr(prof.trace.summary())


def test_profile_collects_many_steps_and_restores_listener():
    x = fl.placeholder(fl.float32, [3], name="x")
    y = fl.multiply(x, 2.0, name="y")
    z = fl.reduce_sum(y, name="z")
    seen = []
    with fl.Session() as s:
        s.set_listener(seen.append)
        with fl.profile(s) as prof:
            for i in range(4):
                assert s.run(z, {x: [i, i, i]}) == 6.0 * i
        assert s._listener is not None
        s.run(z, {x: [1, 1, 1]})  # after the block: not profiled
    assert len(prof.trace.steps) == 4
    assert len(prof.steps) == 4 and all(len(t) == 4 for t in prof.steps)  # y, z, 2 consts
    assert len({e.step_id for e in seen}) == 5  # the outer listener kept its events
    top = prof.summary().top_ops.to_records()
    assert {"y", "z"} <= {r["op"] for r in top}
    assert all(r["count"] == 4 for r in top)
    assert "Critical path" in repr(prof)
    dm = prof.summary().tables.get("device_memory")
    if dm is not None:  # the devices' own figures, when they keep them
        assert dm.column("device") == [d.name for d in s.devices]
    assert "<table>" in prof._repr_html_()


def test_profile_then_straight_line_again():
    """Outside a profile block the session goes back to the fast path (no listener)."""
    x = fl.constant(3.0)
    y = fl.square(x)
    with fl.Session() as s:
        with fl.profile(s):
            s.run(y)
        assert s._listener is None
        assert s.run(y) == 9.0


def test_trace_on_two_devices(tmp_path):
    with fl.device("/cpu:0"):
        a = fl.placeholder(fl.float32, [2, 3], name="a")
        a2 = fl.multiply(a, 2.0, name="a2")  # fed: not folded away
    with fl.device("/cpu:1"):
        b = fl.square(a2, name="b")
    with fl.device("/cpu:0"):
        c = fl.reduce_sum(b, name="c")
    md = fl.RunMetadata()
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
        feed = {a: np.arange(6, dtype=np.float32).reshape(2, 3)}
        assert s.run(c, feed, options=FULL, run_metadata=md) == 220.0
    tr = Trace.from_run_metadata(md)
    if not any(r.op_type == "_Recv" for r in tr.ops):
        pytest.skip("partitioning with _Send/_Recv has not landed: the step ran without transfers")
    assert [d[-5:] for d in tr.devices] == ["CPU:0", "CPU:1"]
    assert len(tr.transfers) == 2
    assert {t.bytes for t in tr.transfers} == {24}
    assert {(t.src_device[-5:], t.dst_device[-5:]) for t in tr.transfers} == {("CPU:0", "CPU:1"), ("CPU:1", "CPU:0")}
    for t in tr.transfers:
        assert t.send is not None and t.recv is not None
        assert t.send.device == t.src_device and t.recv.device == t.dst_device
        assert t.recv.end_us >= t.send.start_us and t.wait_us >= 0
        assert t.recv.outputs[0].shape == (2, 3)
    s = tr.summary()
    assert sum(s.transfers.column("bytes")) == 48
    # The Chrome export: one process per device, flows between them.
    doc = json.loads(open(tr.to_chrome(str(tmp_path / "two.json"))).read())
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert sorted(v[-5:] for v in procs.values()) == ["CPU:0", "CPU:1"]
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(starts) == 2 and starts.keys() == ends.keys()
    for k in starts:
        assert starts[k]["pid"] != ends[k]["pid"]
        assert ends[k]["args"]["bytes"] == 24
    path = [r.name for r in tr.critical_path()]
    assert path[-1] == "c"
    assert [r.op_type for r in tr.critical_path()].count("_Recv") == 2
    assert "b" in path and "a2" in path


def test_cond_dead_branch_and_loop_iterations():
    x = fl.constant([1.0, 2.0], name="x0")
    p = fl.placeholder(fl.bool, [], name="p")
    c = fl.cond(p, lambda: fl.square(x, name="sq"), lambda: fl.negative(x, name="ng"))
    r = fl.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [fl.constant(0), x])
    md = fl.RunMetadata()
    with fl.Session() as s:
        out = s.run([c, r], {p: False}, options=FULL, run_metadata=md)
    np.testing.assert_array_equal(out[0], [-1.0, -2.0])
    tr = Trace.from_run_metadata(md)
    sq = [r for r in tr.ops if r.op_type == "Square"]
    ng = [r for r in tr.ops if r.op_type == "Neg"]
    assert len(sq) == 1 and sq[0].dead and sq[0].bytes == 0
    assert len(ng) == 1 and not ng[0].dead and ng[0].bytes == 8
    muls = [r for r in tr.ops if r.op_type == "Mul"]
    live = [m for m in muls if not m.dead]
    assert sorted(m.iteration for m in live) == [0, 1, 2]
    assert {m.frame for m in muls} == {"while/while_context"}
    assert all(m.outputs[0].shape == (2,) for m in live)
    assert [m.iteration for m in muls if m.dead] == [3]  # the exit iteration
    doc = tr.chrome_trace()
    mul_ev = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["args"]["op"] == "Mul"]
    assert {e["args"]["iteration"] for e in mul_ev} == {0, 1, 2, 3}
    assert all(e["args"]["frame"] == "while/while_context" for e in mul_ev)
    assert any(e["cat"] == "dead" and e["args"]["dead"] for e in mul_ev)
    # A loop's critical path ends at its Exit and walks back through every iteration.
    md = fl.RunMetadata()
    with fl.Session() as s:
        s.run(r, options=FULL, run_metadata=md)
    path = Trace.from_run_metadata(md).critical_path()
    assert path[-1].op_type == "Exit"
    assert {r.iteration for r in path} == {0, 1, 2, 3}
