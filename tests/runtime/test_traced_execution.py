"""Watched steps: the plain loop's events, the session's listener API, make_callable
noticing a listener set after it was made, and dead values reaching a partition
without control-flow ops."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.executor import ExecEvent, Execution, chain_listeners
from flowlab.runtime.fetches import FetchMapper
from flowlab.runtime.step import Step
from flowlab.runtime.step_stats import StepStatsCollector
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
