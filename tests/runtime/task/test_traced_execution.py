"""Watched steps: the plain loop's events, the session's listener API, make_callable
noticing a listener set after it was made, and dead values reaching a partition
without control-flow ops."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.client.fetches import FetchMapper
from flowlab.runtime.client.step_stats import StepStatsCollector
from flowlab.runtime.task.executor import ExecEvent, Execution, chain_listeners
from flowlab.runtime.task.step import Step
from tests.runtime import testing_ops as T

FULL = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)


def _model():
    """A small training step: variables, reads, several multi-output ops."""
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        w = fl.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
        h = fl.nn.relu(fl.matmul(x, w))
        parts = fl.split(h, 2, axis=1)
        loss = fl.reduce_mean(parts[0] * parts[1])
        train = fl.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = fl.global_variables_initializer()
    return g, x, loss, train, init


def _describe(ev: ExecEvent):
    info = ev.info
    if ev.kind == "op_end":
        info = tuple((np.shape(o), getattr(o, "dtype", None)) for o in info)
    return (ev.kind, ev.step_id, ev.node, ev.op_type, ev.device, ev.frame, ev.iteration, ev.op, info)


def test_plain_traced_loop_emits_the_per_node_paths_events():
    g, x, loss, train, init = _model()
    feed = np.ones((4, 3), np.float32)
    with fl.Session(graph=g) as s:
        s.run(init)
        plan = s._plan_for([x], FetchMapper(g, [loss, train]).tensors, FetchMapper(g, [loss, train]).targets)
        assert not plan.has_control_flow
        plain: list[ExecEvent] = []
        ex = Execution(plan, Step(s), [feed], plain.append)
        v_plain = ex.run()
        # The same step, one node at a time: every node through `_execute`.
        per_node: list[ExecEvent] = []
        ex2 = Execution(plan, Step(s), [feed], per_node.append)
        ex2.start()
        while ex2.ready:
            ex2.run_one()
        v_node = ex2.finish()
    assert len(plain) == 2 * len(plan.nodes)
    assert {e.kind for e in plain} == {"op_start", "op_end"}
    assert len({e.step_id for e in plain}) == 1
    # Same content, step ids apart (two steps).
    assert [_describe(e)[:1] + _describe(e)[2:] for e in plain] == [
        _describe(e)[:1] + _describe(e)[2:] for e in per_node
    ]
    assert all(isinstance(e.op, fl.Operation) and e.op.name == e.node for e in plain)
    assert all(e.time_us > 0 and e.thread for e in plain)
    # op_end carries the outputs: a sequence, one entry per output.
    ends = {e.node: e for e in plain if e.kind == "op_end"}
    split = next(e for e in ends.values() if e.op_type == "Split")
    assert len(split.info) == 2 and all(o.shape == (4, 1) for o in split.info)
    assert type(v_plain[0]) is type(v_node[0]) and v_plain[0] > v_node[0]  # w moved downhill


def test_step_stats_from_the_plain_loop_name_inputs_and_outputs():
    g, x, loss, train, init = _model()
    with fl.Session(graph=g) as s:
        s.run(init)
        md = fl.RunMetadata()
        s.run([loss, train], {x: np.ones((4, 3), np.float32)}, options=FULL, run_metadata=md)
    nodes = {n.node_name: n for d in md.step_stats.dev_stats for n in d.node_stats}
    mm = next(n for n in nodes.values() if n.op_type == "MatMul" and n.node_name == "MatMul")
    assert mm.inputs == ["x:0", "w/read:0"]
    assert mm.timeline_label == "MatMul = MatMul(x, w/read)"
    assert [tuple(d.size for d in o.tensor_description.shape.dim) for o in mm.output] == [(4, 2)]
    assert mm.output[0].tensor_description.dtype == fl.float32


def test_collector_needs_no_resolver_for_events_that_carry_the_op():
    g, x, loss, train, init = _model()
    with fl.Session(graph=g) as s:
        s.run(init)
        col = StepStatsCollector(resolve=None)  # no lookup by name possible
        s.set_listener(col.listen)
        s.run(loss, {x: np.ones((2, 3), np.float32)})
    nodes = {n.node_name: n for d in col.step_stats().dev_stats for n in d.node_stats}
    assert nodes["MatMul"].inputs == ["x:0", "w/read:0"]


def test_an_error_in_the_plain_traced_loop_is_published():
    a = fl.placeholder(fl.float32, [None])
    b = fl.placeholder(fl.float32, [None])
    c = a + b
    events: list[ExecEvent] = []
    with fl.Session() as s:
        s.set_listener(events.append)
        with pytest.raises(errors.InvalidArgumentError):
            s.run(c, {a: np.ones(2, np.float32), b: np.ones(3, np.float32)})
    kinds = [(e.kind, e.node) for e in events]
    assert ("op_start", c.op.name) in kinds and ("error", c.op.name) in kinds
    assert ("op_end", c.op.name) not in kinds


def test_listener_api_get_set_and_chain():
    seen: list[str] = []
    one = lambda ev: seen.append("one")  # noqa: E731
    two = lambda ev: seen.append("two")  # noqa: E731
    assert chain_listeners(None, None) is None
    assert chain_listeners(None, one) is one
    with fl.Session() as s:
        assert s.listener is None
        assert s.set_listener(one) is None
        assert s.listener is one
        assert s.set_listener(chain_listeners(s.listener, two)) is one
        s.run(fl.constant(1.0) + 1.0)
        assert seen[:4] == ["one", "two", "one", "two"]
        with fl.profile(s) as prof:
            s.run(fl.constant(2.0) * 3.0)
        assert s.listener is not one and s.listener is not None  # the chain is back
        assert len(prof.collector.step_ids()) == 1
        chain_listeners(one, two, one)(None)  # type: ignore[arg-type]
        assert seen[-3:] == ["one", "two", "one"]


def test_make_callable_made_before_a_listener_sees_it():
    x = fl.placeholder(fl.float32, [], name="x")
    y = x * 2.0 + 1.0
    events: list[ExecEvent] = []
    with fl.Session() as s:
        f = s.make_callable(y, [x])
        f0 = s.make_callable(fl.constant(3.0) + 1.0)
        assert f(1.0) == 3.0 and not events
        s.set_listener(events.append)
        assert f(2.0) == 5.0
        assert {e.node for e in events if e.kind == "op_end"} >= {y.op.name}
        n = len(events)
        assert f0() == 4.0 and len(events) > n
        s.set_listener(None)
        n = len(events)
        assert f(3.0) == 7.0 and len(events) == n
        with fl.profile(s) as prof:
            f(4.0)
        assert y.op.name in {o.name for o in prof.trace.ops}


def test_a_dead_value_reaching_a_partition_without_control_flow_ops_unwatched():
    x = fl.constant(np.float32(3.0))
    pred = fl.placeholder(fl.bool, [])
    with fl.device("/cpu:0"):
        _, t = T.switch(x, pred)
    with fl.device("/cpu:1"):
        t2 = T.plus(t, t, name="true_branch")  # its partition: a _Recv and this op
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
        assert s.run(t2, {pred: True}) == 6.0
        with pytest.raises(errors.InvalidArgumentError, match="is dead"):
            s.run(t2, {pred: False})


# --- the traced straight-line function ------------------------------------------------
def _records(stats):
    """Per executed op, in the order recorded: everything a trace reads but the clock."""
    out = []
    for d in stats.dev_stats:
        for n in d.node_stats:
            outs = [(o.slot, o.tensor_description.dtype, tuple(x.size for x in o.tensor_description.shape.dim),
                     o.tensor_description.allocation_description.requested_bytes) for o in n.output]
            out.append((d.device, n.node_name, n.op_type, tuple(n.inputs), n.timeline_label, n.thread_id,
                        bool(n.dead), n.error, n.frame, n.iteration, n.task, tuple(outs)))
    return out


def _both_paths(s, fetches, feed):
    """One step with a collector taking records (the traced straight-line function)
    and one with a collector that only sees events (the dataflow executor)."""
    lined, evented = StepStatsCollector(), StepStatsCollector()
    s.set_listener(lined.listen)
    a = s.run(fetches, feed)
    s.set_listener(lambda ev: evented.listen(ev))  # a plain function: events only
    b = s.run(fetches, feed)
    s.set_listener(None)
    assert any(e[0] == "records" for e in lined.events)
    assert not any(e[0] == "records" for e in evented.events)
    return a, b, lined.step_stats(), evented.step_stats()


def test_traced_line_records_the_same_ops_as_the_dataflow_path():
    g, x, loss, train, init = _model()
    feed = {x: np.ones((4, 3), np.float32)}
    with fl.Session(graph=g) as s:
        s.run(init)
        a, b, lined, evented = _both_paths(s, [loss, train], feed)
        plan = s._plan_of([loss, train], feed)
    assert plan.traced is not None  # generated by the first traced step
    assert a[0] > b[0]  # both steps trained w
    ra, rb = _records(lined), _records(evented)
    assert len(ra) == len(plan.nodes) and sorted(ra, key=repr) == sorted(rb, key=repr)
    # The recorded order is the order the ops ran: a topological one.
    seen: set[str] = set()
    producers = {n.op.name for n in plan.nodes}
    for rec in ra:
        assert all(i.lstrip("^").split(":")[0] in seen for i in rec[3]
                   if i.lstrip("^").split(":")[0] in producers)
        seen.add(rec[1])
    split = next(r for r in ra if r[2] == "Split")
    assert [o[2:] for o in split[11]] == [((4, 1), 16), ((4, 1), 16)]
    times = [(n.all_start_nanos, n.all_end_rel_nanos) for d in lined.dev_stats for n in d.node_stats]
    assert all(t > 0 and dur >= 0 for t, dur in times)
    assert all(t1 >= t0 + d0 for (t0, d0), (t1, _) in zip(times, times[1:]))  # one after another


def test_traced_line_on_a_chain_records_the_same_sequence():
    x = fl.placeholder(fl.float32, [3], name="x")
    y = x
    for i in range(6):
        y = fl.square(y, name=f"sq{i}") if i % 2 else fl.negative(y, name=f"neg{i}")
    with fl.Session() as s:
        a, b, lined, evented = _both_paths(s, y, {x: np.ones(3, np.float32)})
    assert _records(lined) == _records(evented)
    np.testing.assert_array_equal(a, b)


def test_traced_line_describes_outputs_nobody_reads_and_folded_constants():
    x = fl.placeholder(fl.float32, [None], name="x")
    uy, _ = fl.unique(x, name="u")  # the index output is read by nobody
    k = fl.add(fl.constant([1.0, 2.0], name="c1"), fl.constant([3.0, 4.0], name="c2"), name="k")  # folded
    z = fl.reduce_sum(uy, name="z") + fl.reduce_sum(k)
    feed = {x: np.array([1, 1, 2], np.float32)}
    with fl.Session() as s:
        a, b, lined, evented = _both_paths(s, z, feed)
        # The task is sent a folded op as a Const node under the op's name.
        names = set(s.optimization(z, feed).folded)
        folded = [n.op.name for n in s._plan_of(z, feed).nodes if n.op.name in names and n.op.type == "Const"]
    assert a == b == 13.0 and folded
    ra, rb = _records(lined), _records(evented)
    assert sorted(ra, key=repr) == sorted(rb, key=repr)
    u = next(r for r in ra if r[1] == "u")
    assert [o[1:] for o in u[11]] == [(fl.float32, (2,), 8), (fl.int32, (3,), 12)]
    assert set(folded) <= {r[1] for r in ra}


def test_traced_line_failing_op_is_recorded_and_writes_are_undone():
    v = fl.Variable(1.0, name="v")
    a = fl.placeholder(fl.float32, [None], name="a")
    b = fl.placeholder(fl.float32, [None], name="b")
    inc = fl.assign_add(v, 1.0, name="inc")
    with fl.control_dependencies([inc]):
        c = fl.add(a, b, name="c")
    feed = {a: np.ones(2, np.float32), b: np.ones(3, np.float32)}
    with fl.Session() as s:
        s.run(v.initializer)
        md = fl.RunMetadata()
        with pytest.raises(errors.InvalidArgumentError, match="AddV2 'c'"):
            s.run(c, feed, options=FULL, run_metadata=md)
        assert s.run(v) == 1.0  # the step's assign_add rolled back
        col = StepStatsCollector()
        s.set_listener(col.listen)
        with pytest.raises(errors.InvalidArgumentError, match="AddV2 'c'"):
            s.run(c, feed)
        s.set_listener(None)
        assert s.run(v) == 1.0
    nodes = {n.node_name: n for d in col.step_stats().dev_stats for n in d.node_stats}
    assert nodes["c"].error and "AddV2 'c'" in nodes["c"].error and not nodes["c"].output
    assert nodes["inc"].error == "" and nodes["inc"].output
    assert any(e[0] == "records" for e in col.events)


def test_traced_line_is_taken_only_when_every_listener_takes_records(monkeypatch):
    g, x, loss, train, init = _model()
    feed = {x: np.ones((4, 3), np.float32)}
    lines = []
    orig = Execution._run_traced_line

    def spy(self, traced, take):
        lines.append(traced)
        return orig(self, traced, take)

    monkeypatch.setattr(Execution, "_run_traced_line", spy)
    with fl.Session(graph=g) as s:
        s.run(init)
        with fl.profile(s) as prof:
            s.run([loss, train], feed)  # the profile's collector alone
            md = fl.RunMetadata()
            s.run([loss, train], feed, options=FULL, run_metadata=md)  # two collectors chained
        assert len(lines) == 2 and len(prof.collector.step_ids()) == 2
        assert len(_records(md.step_stats)) == len(lines[0].order)
        events: list[ExecEvent] = []
        s.set_listener(events.append)
        with fl.profile(s) as prof2:  # chained with a plain listener: events for both
            s.run([loss, train], feed)
        assert len(lines) == 2 and events and len(prof2.collector.step_ids()) == 1
        s.set_listener(None)
        f = s.make_callable([loss, train], [x])
        with fl.profile(s) as prof3:
            f(feed[x])
        assert len(lines) == 3 and len(prof3.trace.ops) == len(lines[0].order)
    taker = chain_listeners(StepStatsCollector().listen, StepStatsCollector().listen)
    assert hasattr(taker, "take_records")
    assert not hasattr(chain_listeners(StepStatsCollector().listen, events.append), "take_records")


def test_traced_line_with_an_asynchronous_kernel():
    x = fl.placeholder(fl.float32, [2], name="x")
    y = T.async_copy(x * 2.0, name="acopy") + 1.0
    with fl.Session() as s:
        a, b, lined, evented = _both_paths(s, y, {x: np.ones(2, np.float32)})
    np.testing.assert_array_equal(a, [3.0, 3.0])
    ra = _records(lined)
    assert sorted(ra, key=repr) == sorted(_records(evented), key=repr)
    acopy = next(n for d in lined.dev_stats for n in d.node_stats if n.node_name == "acopy")
    assert acopy.all_end_rel_nanos >= 5_000_000  # waited for the kernel's done (10 ms)
