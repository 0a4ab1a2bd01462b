"""Traced and watched steps keep the fused loop path: a listener that takes records
(the StepStats collector, the live bridge) gets each fused loop's iterations from its
recording twin (`loop_fusion.recording_twin`), and what it gets is what the frame path
gives -- the same node stats (names, counts, frames, iterations, dead marks, output
shapes) -- with the same values, errors and undo."""

from __future__ import annotations

import collections
from unittest import mock

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.client.step_stats import StepStatsCollector
from flowlab.runtime.task import loop_fusion, loop_recording
from flowlab.viz.live import LiveBridge

FULL = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)


def _stats(md, live_only=False):
    """node stats as a Counter of (name, op type, dead, frame, iteration, output shapes
    and dtypes, error or not)."""
    c = collections.Counter()
    for d in md.step_stats.dev_stats:
        for ns in d.node_stats:
            if live_only and ns.dead:
                continue
            outs = tuple((o.slot, tuple(x.size for x in o.tensor_description.shape.dim),
                          str(o.tensor_description.dtype)) for o in ns.output)
            c[(ns.node_name, ns.op_type, ns.dead, ns.frame, ns.iteration, outs, bool(ns.error))] += 1
    return c


def _traced_both_ways(build, feed_of=None, config=None, init=True):
    """Run the step traced with fusion on and off: (values, stats, recorded runs) each."""
    g = fl.Graph()
    with g.as_default():
        fetches = build()
        ini = fl.global_variables_initializer() if init and fl.global_variables() else None
    out = []
    with fl.Session(graph=g, config=config) as s:
        if ini is not None:
            s.run(ini)
        feed = feed_of(g) if feed_of else None
        for fused in (True, False):
            with mock.patch.object(loop_fusion, "ENABLED", fused):
                before = loop_recording.TRACED_RUNS[0]
                md = fl.RunMetadata()
                v = s.run(fetches, feed, options=FULL, run_metadata=md)
                untraced = s.run(fetches, feed)
                out.append((v, md, loop_recording.TRACED_RUNS[0] - before, untraced))
    return out


def _same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)


def _scalar_loop():
    n = fl.placeholder(fl.int32, [], name="n")
    i, acc = fl.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.5 + 1.0),
                           [fl.constant(0), fl.constant(1.0)])
    return [i, acc]


@pytest.mark.parametrize("n", [0, 5, 70])  # 70: rows reach the listener in batches of 32
def test_a_traced_scalar_loop_runs_fused_and_records_what_the_frame_path_does(n):
    (v_on, md_on, runs_on, plain_on), (v_off, md_off, runs_off, _) = _traced_both_ways(
        _scalar_loop, lambda g: {g.get_tensor_by_name("n:0"): n})
    assert runs_on == 1 and runs_off == 0  # the traced step stayed on the fused path
    _same(v_on, v_off)
    _same(v_on, plain_on)
    assert float(v_on[1]) == pytest.approx(1.5 ** n + 2 * (1.5 ** n - 1), rel=1e-5)
    on, off = _stats(md_on), _stats(md_off)
    assert on == off
    # Per execution, as TensorFlow's FULL_TRACE: the condition n + 1 times, the body n.
    live = collections.Counter(k[0] for k in _stats(md_on, live_only=True).elements())
    assert live["while/Less"] == n + 1 and live["while/Switch"] == n + 1
    assert live["while/add"] == n and live["while/mul"] == n and live["while/Exit"] == 1
    iterations = sorted({k[4] for k in _stats(md_on, live_only=True) if k[0] == "while/Less"})
    assert iterations == list(range(n + 1))


def test_a_profile_block_keeps_the_fused_loop():
    g = fl.Graph()
    with g.as_default():
        fetches = _scalar_loop()
    with fl.Session(graph=g) as s:
        n = g.get_tensor_by_name("n:0")
        got = []
        for fused in (True, False):
            with mock.patch.object(loop_fusion, "ENABLED", fused):
                before = loop_recording.TRACED_RUNS[0]
                with fl.profile(s) as prof:
                    s.run(fetches, {n: 4})
                    s.run(fetches, {n: 2})
                got.append((loop_recording.TRACED_RUNS[0] - before, collections.Counter(op.name for op in prof.trace.ops)))
    (runs_on, names_on), (runs_off, names_off) = got
    assert runs_on == 2 and runs_off == 0
    assert names_on == names_off
    assert names_on["while/Less"] == 5 + 3


def test_recorded_times_are_ordered_within_each_iteration():
    ((_, md, _, _), _) = _traced_both_ways(_scalar_loop, lambda g: {g.get_tensor_by_name("n:0"): 4})
    by_it = collections.defaultdict(list)
    for d in md.step_stats.dev_stats:
        for ns in d.node_stats:
            assert ns.all_end_rel_nanos >= 0
            if ns.frame and not ns.dead:
                by_it[ns.iteration].append(ns)
    starts = [min(x.all_start_nanos for x in by_it[k]) for k in sorted(by_it)]
    assert starts == sorted(starts) and len(starts) == 5
    less = {ns.iteration: ns for ns in itertools_chain(by_it) if ns.node_name == "while/Less"}
    add = {ns.iteration: ns for ns in itertools_chain(by_it) if ns.node_name == "while/add"}
    for k in add:  # the body's add runs after the condition's Less, in each iteration
        assert add[k].all_start_nanos >= less[k].all_start_nanos + less[k].all_end_rel_nanos


def itertools_chain(by_it):
    return [ns for v in by_it.values() for ns in v]


def test_a_cond_inside_the_loop_records_its_dead_branch_as_the_frame_path():
    def build():
        n = fl.placeholder(fl.int32, [], name="n")

        def body(i, a):
            a2 = fl.cond(fl.equal(i % 2, 0), lambda: a + fl.ones([3]), lambda: a * 2.0)
            return i + 1, a2

        return list(fl.while_loop(lambda i, a: i < n, body, [fl.constant(0), fl.zeros([3])]))

    (v_on, md_on, runs_on, plain), (v_off, md_off, _, _) = _traced_both_ways(
        build, lambda g: {g.get_tensor_by_name("n:0"): 5})
    assert runs_on == 1
    _same(v_on, v_off)
    _same(v_on, plain)
    assert _stats(md_on) == _stats(md_off)
    assert any(k[2] for k in _stats(md_on) if k[3])  # dead branch ops inside the loop


def test_dynamic_rnn_gradients_traced_fused_match_the_frame_path():
    def build():
        rng = np.random.RandomState(0)
        x = fl.constant(rng.randn(2, 7, 3).astype(np.float32))
        out, _ = fl.nn.dynamic_rnn(fl.nn.rnn_cell.BasicRNNCell(4), x, dtype=fl.float32)
        loss = fl.reduce_sum(out)
        return [loss] + fl.gradients(loss, fl.trainable_variables())

    (v_on, md_on, runs_on, plain), (v_off, md_off, _, _) = _traced_both_ways(build)
    assert runs_on == 2  # the forward loop and the gradient's loop
    for a, b, c in zip(v_on, v_off, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6)
        np.testing.assert_allclose(a, c, rtol=1e-6)
    assert _stats(md_on) == _stats(md_off)
    names = {k[0] for k in _stats(md_on)}
    assert any("MatMul" in x for x in names)


def test_a_nested_loop_records_every_live_execution():
    def build():
        def outer(i, a):
            _, b = fl.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b + 1.0), [fl.constant(0), a])
            return i + 1, b

        return list(fl.while_loop(lambda i, a: i < 4, outer, [fl.constant(0), fl.constant(0.0)]))

    (v_on, md_on, runs_on, _), (v_off, md_off, _, _) = _traced_both_ways(build)
    assert runs_on == 1
    _same(v_on, v_off)
    assert float(v_on[1]) == 6.0
    on = _stats(md_on, live_only=True)
    off = _stats(md_off, live_only=True)
    # The inner loop's Enters run in the outer frame: on the fused path they are the
    # inner loop's call, not recorded apart (see the report of issue 23).
    assert on == collections.Counter({k: v for k, v in off.items() if k[1] != "Enter" or k[3] == ""})
    assert sum(v for k, v in on.items() if k[0] == "while/while/add") == 6  # 0+1+2+3 inner iterations


def test_an_error_inside_a_traced_fused_loop_names_the_op_and_rolls_back():
    def build():
        v = fl.Variable(0.0, name="v")
        params = fl.constant([1.0, 2.0, 3.0])

        def body(i, a):
            with fl.control_dependencies([fl.assign_add(v, 1.0)]):
                return i + 1, a + fl.gather(params, i, name="pick")

        _, a = fl.while_loop(lambda i, a: i < 6, body, [fl.constant(0), fl.constant(0.0)])
        return a, v

    g = fl.Graph()
    with g.as_default():
        a, v = build()
        init = fl.global_variables_initializer()
    with fl.Session(graph=g) as s:
        s.run(init)
        before = loop_recording.TRACED_RUNS[0]
        coll = StepStatsCollector()
        s.set_listener(coll.listen)  # (a failed step fills no RunMetadata: a listener)
        with pytest.raises(errors.InvalidArgumentError, match="while/pick") as got:
            s.run(a)
        s.set_listener(None)
        assert loop_recording.TRACED_RUNS[0] == before + 1
        assert got.value.op is not None and got.value.op.name == "while/pick"
        assert float(s.run(v)) == 0.0  # the four increments were undone
    stats = collections.Counter(
        (n.node_name, n.dead, bool(n.error)) for d in coll.step_stats().dev_stats for n in d.node_stats)
    # Iterations 0-2 whole, and iteration 3 up to the failing gather (recorded with
    # its error), as the frame path records them.
    assert stats[("while/AssignAdd", False, False)] == 4
    assert stats[("while/Less", False, False)] == 4
    assert stats[("while/pick", False, False)] == 3
    assert stats[("while/add_1", False, False)] == 3
    assert stats[("while/pick", False, True)] == 1


def test_a_live_bridge_sees_every_op_of_a_fused_loop():
    g = fl.Graph()
    with g.as_default():
        fetches = _scalar_loop()
    with fl.Session(graph=g) as s:
        n = g.get_tensor_by_name("n:0")
        taken = []
        bridge = LiveBridge(s, taken.append, rate=1000.0, sample=False,
                            on_value=lambda name, outs: taken.append((name, outs)))
        bridge.watched = "while/mul"
        bridge.start()
        try:
            before = loop_recording.TRACED_RUNS[0]
            got = s.run(fetches, {n: 3})
            assert loop_recording.TRACED_RUNS[0] == before + 1
        finally:
            bridge.stop()
        names_seen = set(bridge.fold(bridge.pending)["done"])
        for m in taken:
            if isinstance(m, dict):
                names_seen |= set(m["done"])
        coll = StepStatsCollector()
        s.set_listener(coll.listen)
        with mock.patch.object(loop_fusion, "ENABLED", False):
            s.run(fetches, {n: 3})
        s.set_listener(None)
    assert float(got[1]) == pytest.approx(1.5 ** 3 + 2 * (1.5 ** 3 - 1))
    frame_path = {e[2] for e in coll.events if e[0] == "op_end"}
    assert frame_path <= names_seen
    # The watched op's outputs: those of the last iteration that ran the body (a = 4.75).
    values = [o for m in taken if isinstance(m, tuple) for o in m[1]]
    assert values and float(values[-1]) == pytest.approx(4.75 * 1.5)


def test_a_loop_across_two_devices_keeps_the_fused_path_traced():
    def build():
        def body(i, a):
            with fl.device("/cpu:1"):
                b = a * 2.0 + 1.0
            return i + 1, b

        with fl.device("/cpu:0"):
            return list(fl.while_loop(lambda i, a: i < 5, body, [fl.constant(0), fl.constant(1.0)]))

    (v_on, md_on, runs_on, plain), (v_off, md_off, runs_off, _) = _traced_both_ways(
        build, config=fl.ConfigProto(device_count={"CPU": 2}))
    assert runs_on == 1 and runs_off == 0
    _same(v_on, v_off)
    _same(v_on, plain)
    assert float(v_on[1]) == 63.0
    on = _stats(md_on, live_only=True)
    devices = {d.device for d in md_on.step_stats.dev_stats}
    assert any(x.endswith("CPU:1") for x in devices)
    mul = [k for k in on.elements() if k[0] == "while/mul"]
    assert len(mul) == 5


def test_a_traced_fused_loop_past_its_deadline_stops_and_keeps_what_it_recorded():
    g = fl.Graph()
    with g.as_default():
        fetches = _scalar_loop()
    with fl.Session(graph=g) as s:
        n = g.get_tensor_by_name("n:0")
        coll = StepStatsCollector()
        s.set_listener(coll.listen)
        before = loop_recording.TRACED_RUNS[0]
        with pytest.raises(errors.DeadlineExceededError):
            s.run(fetches, {n: 10 ** 9}, options=fl.RunOptions(timeout_in_ms=20))
        s.set_listener(None)
        assert loop_recording.TRACED_RUNS[0] == before + 1
        assert s.run(fetches, {n: 3})[0] == 3  # the session goes on
    less = [ns for d in coll.step_stats().dev_stats for ns in d.node_stats if ns.node_name == "while/Less"]
    assert len(less) > 32  # the batches sent before the stop
    assert [ns.iteration for ns in less] == list(range(len(less)))


def test_a_taker_of_loop_records_only_gets_a_straight_line_steps_events_as_they_happen():
    """`take_records.whole_steps = False` (a task server's recorder): a straight-line
    step publishes every op's events, a loop still hands its rows; chained with a
    collector that takes whole steps, the chain takes loop records only too."""
    from flowlab.runtime.task.events import LoopRecords, StepRecords, chain_listeners

    got: list = []

    def listener(ev):
        got.append((ev.kind, ev.node))

    def take_records(rec):
        got.append(type(rec))

    take_records.whole_steps = False
    listener.take_records = take_records
    g = fl.Graph()
    with g.as_default():
        a = fl.constant(np.float32(2.0), name="a")
        line = fl.square(a, name="sq") + 1.0
        _, looped = fl.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2.0), [fl.constant(0), a])
    collector = StepStatsCollector()
    for watcher in (listener, chain_listeners(collector.listen, listener)):
        assert getattr(watcher.take_records, "whole_steps", True) is False
        with fl.Session(graph=g) as s:
            s.set_listener(watcher)
            got.clear()
            assert s.run(line) == 5.0
            assert StepRecords not in got and ("op_end", line.op.name) in got  # (sq is folded)
            got.clear()
            before = loop_recording.TRACED_RUNS[0]
            assert s.run(looped) == 16.0
            assert LoopRecords in got and loop_recording.TRACED_RUNS[0] == before + 1
