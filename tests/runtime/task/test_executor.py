"""The dataflow executor: asynchronous kernels, dead values, cancellation, deadlines,
events, and driving a step one op at a time."""

from __future__ import annotations

import time

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.runtime.master.prune import prune
from tests.runtime import testing_ops as T


def test_asynchronous_kernels_complete_through_callbacks():
    x = fl.constant(np.arange(4, dtype=np.float32))
    a = T.async_copy(x, delay=0.02)
    b = T.async_copy(x, delay=0.01)
    c = T.plus(a, b)
    with fl.Session() as s:
        plan = s._plan_for([], [c], [])
        assert plan.straight_line is None  # async kernels take the dataflow path
        np.testing.assert_array_equal(s.run(c), 2 * np.arange(4))


def test_async_kernels_are_in_flight_together():
    x = fl.constant(1.0)
    outs = [T.async_copy(x, delay=0.1) for _ in range(5)]
    T.in_flight.reset()
    with fl.Session() as s:
        assert s.run(outs) == [1.0] * 5
    # All five waits were outstanding at once: no executor thread was parked on one.
    assert T.in_flight.peak == 5


def test_dead_values_propagate_and_merge_forwards_the_live_one():
    x = fl.constant(np.float32(3.0))
    pred = fl.placeholder(fl.bool, [], name="pred")
    f, t = T.switch(x, pred)
    f2 = T.plus(f, f, name="false_branch")  # dead when pred is True
    t2 = T.plus(t, x, name="true_branch")  # dead when pred is False
    m = T.merge([f2, t2])
    events = []
    with fl.Session() as s:
        s.set_listener(events.append)
        assert s.run(m, {pred: True}) == 6.0
        assert s.run(m, {pred: False}) == 6.0
        dead = {e.node for e in events if e.kind == "op_dead"}
        assert dead == {"true_branch", "false_branch"}
        with pytest.raises(errors.InvalidArgumentError, match="is dead"):
            s.run(t2, {pred: False})


def test_dead_propagates_along_control_edges():
    x = fl.constant(np.float32(1.0))
    pred = fl.constant(False)
    _, t = T.switch(x, pred)
    pivot = T.plus(t, t, name="pivot")  # dead: its input is the untaken branch
    with fl.control_dependencies([pivot.op]):
        after = T.plus(x, x, name="after")
    m = T.merge([after, x])
    with fl.Session() as s:
        s.set_listener(lambda e: None)
        assert s.run(m) == 1.0  # `after` is dead: Merge forwards x


def test_step_deadline():
    x = fl.constant(1.0)
    y = T.block(x, name="waits_forever")
    with fl.Session() as s:
        t0 = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            s.run(y, options=fl.RunOptions(timeout_in_ms=100))
        assert time.monotonic() - t0 < 2.0


def test_close_cancels_blocked_steps():
    x = fl.constant(1.0)
    y = T.block(x)
    caught = T.run_then_close(fl.Session(), y)
    assert len(caught) == 1 and isinstance(caught[0], errors.CancelledError)


def test_first_error_cancels_blocked_ops():
    x = fl.constant(1.0)
    blocked = T.block(x, name="blocked")
    failing = T.fail(x, message="first failure")
    with fl.Session() as s:
        with pytest.raises(errors.InvalidArgumentError, match="first failure"):
            s.run([blocked, failing])


def test_events_carry_op_device_and_order():
    a = fl.constant(1.0, name="a")
    b = T.plus(a, a, name="b")
    events = []
    with fl.Session() as s:
        s.set_listener(events.append)
        s.run(b)
    kinds = [(e.kind, e.node) for e in events]
    assert kinds == [("op_start", "a"), ("op_end", "a"), ("op_start", "b"), ("op_end", "b")]
    assert all(e.device.endswith("CPU:0") for e in events)
    assert events[0].time_us <= events[-1].time_us


def test_drive_one_op_at_a_time():
    a = fl.constant(1.0, name="a")
    b = fl.constant(2.0, name="b")
    c = T.plus(a, b, name="c")
    with fl.Session() as s:
        ex, mapper = s.start_execution(c)
        ex.start()
        assert sorted(n.op.name for n in ex.ready_nodes()) == ["a", "b"]
        ex.run_one()
        ex.run_one()
        assert [n.op.name for n in ex.ready_nodes()] == ["c"]
        ex.run_one()
        assert ex.finished
        assert mapper.build(ex.finish()) == 3.0


def test_prune_keeps_only_what_fetches_need():
    x = fl.placeholder(fl.float32, [], name="x")
    a = T.plus(x, x, name="a")
    T.plus(a, a, name="unused")
    b = T.plus(a, x, name="b")
    with fl.control_dependencies([b]):
        d = T.plus(x, x, name="d")
    names = [op.name for op in prune([d], [], [])]
    assert names == ["x", "a", "b", "d"]
    names = [op.name for op in prune([b], [], [a])]
    assert names == ["x", "b"]


def test_dead_sentinel_is_a_singleton():
    import pickle

    assert pickle.loads(pickle.dumps(DEAD)) is DEAD


def test_expensive_kernels_overlap_on_the_op_pool():
    x = fl.constant(np.ones(3, np.float32))
    outs = [T.slow_copy(x, seconds=0.5) for _ in range(2)]
    total = T.plus(outs[0], outs[1])
    T.in_flight.reset()
    with fl.Session(config=fl.ConfigProto(inter_op_parallelism_threads=2)) as s:
        np.testing.assert_array_equal(s.run(total), 2 * np.ones(3))
    assert T.in_flight.peak == 2
    T.in_flight.reset()
    with fl.Session() as s:  # no pool: the straight-line plan runs them in turn
        s.run(total)
    assert T.in_flight.peak == 1


def test_one_asynchronous_kernel_runs_on_the_straight_line_after_independent_ops(tf1):
    """A plan with one asynchronous op (a dequeue) is compiled to straight-line code that
    runs it last among the ops not depending on it: a close in the same step still
    reaches the queue first, as on the dataflow executor (and in TensorFlow)."""
    from tests.difftest import assert_same_error

    def build(tf):
        q = tf.FIFOQueue(2, tf.float32)
        return [q.dequeue(), q.close()]

    tf_err, fl_err = assert_same_error(tf1, build)
    assert "is closed and has insufficient elements" in str(fl_err)
    q = fl.FIFOQueue(2, fl.float32)
    deq = q.dequeue()
    with fl.Session() as s:
        s.run(q.enqueue(5.0))
        plan = s._plan_for([], [deq], [])
        assert plan.straight_line is not None and plan.has_async
        assert s.run(deq) == 5.0
        with pytest.raises(errors.DeadlineExceededError):
            s.run(deq, options=fl.RunOptions(timeout_in_ms=50))
        s.run(q.enqueue(6.0))  # the timed-out dequeue left nothing behind
        assert s.run(deq) == 6.0
