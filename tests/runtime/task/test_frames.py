"""The executor's multi-execution hook and its frame path (loops built by hand from
the control-flow primitives)."""

from __future__ import annotations

import queue

import numpy as np
import pytest

import flowlab as tf
from flowlab import errors
from flowlab.runtime.task.executor import Execution, run_executions
from flowlab.runtime.task.step import Step
from tests.runtime import testing_ops as T


# --- several executions of one step, driven together ------------------------------------
def _plan(sess, fetches, feeds=()):
    return sess._plan_for(list(feeds), list(fetches), [])


def test_run_executions_drives_several_plans_of_one_step():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(2.0)
        a = T.async_copy(x * 3.0, delay=0.02)
        b = T.async_copy(x + 1.0, delay=0.01)
    sess = tf.Session(graph=g)
    step = Step(sess)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex1 = Execution(_plan(sess, [a]), step, [], completions=shared)
    ex2 = Execution(_plan(sess, [b]), step, [], completions=shared)
    assert run_executions([ex1, ex2]) == [[6.0], [3.0]]


def test_run_executions_first_error_fails_all_and_undoes_writes_once():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        assign = tf.assign(v, 5.0)
        with tf.control_dependencies([assign]):
            bad = T.fail(tf.constant(1.0), message="kaput")
        blocked = T.block(tf.constant(1.0))
    sess = tf.Session(graph=g)
    sess.run(v.initializer)
    step = Step(sess)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex1 = Execution(_plan(sess, [bad]), step, [], completions=shared)
    ex2 = Execution(_plan(sess, [blocked]), step, [], completions=shared)
    with pytest.raises(errors.InvalidArgumentError, match="kaput"):
        run_executions([ex2, ex1])
    assert ex2.error is not None
    assert sess.run(v) == 1.0


def test_run_executions_deadline():
    g = tf.Graph()
    with g.as_default():
        blocked = T.block(tf.constant(1.0))
    sess = tf.Session(graph=g)
    import time

    step = Step(sess, deadline=time.monotonic() + 0.05)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex = Execution(_plan(sess, [blocked]), step, [], completions=shared)
    with pytest.raises(errors.DeadlineExceededError):
        run_executions([ex])


def test_run_executions_rejects_separate_queues():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
    sess = tf.Session(graph=g)
    step = Step(sess)
    with pytest.raises(ValueError):
        run_executions([Execution(_plan(sess, [c]), step, []), Execution(_plan(sess, [c]), step, [])])


def test_single_execution_advance_and_on_completion():
    g = tf.Graph()
    with g.as_default():
        a = T.async_copy(tf.constant(np.arange(3.0)), delay=0.01)
        b = a * 2.0
    sess = tf.Session(graph=g)
    ex = Execution(_plan(sess, [b]), Step(sess), [])
    ex.start()
    ex.advance()
    assert not ex.finished
    item = ex.completions.get(timeout=5)
    assert item[0] is ex
    ex.on_completion(item)
    ex.advance()
    assert ex.finished
    np.testing.assert_array_equal(ex.finish()[0], [0.0, 2.0, 4.0])


# --- loops built by hand from the primitives --------------------------------------------
from flowlab.kernels.registry import frame_of, kernel  # noqa: E402
from flowlab.ops import control_flow_ops as cf  # noqa: E402
from flowlab.ops.builder import apply_op  # noqa: E402
from flowlab.ops.gradient_registry import not_differentiable  # noqa: E402
from flowlab.ops.op_def import op_def  # noqa: E402
from flowlab.runtime.task.frames import FrameExecution  # noqa: E402


def while_by_hand(cond, body, loop_vars, name="loop", parallel_iterations=10, invariants=()):
    """TensorFlow's while_loop structure: Enter -> Merge -> cond -> LoopCond -> Switch ->
    (Exit | Identity -> body -> NextIteration -> Merge)."""
    enters = [cf.enter(v, name, parallel_iterations=parallel_iterations) for v in loop_vars]
    invs = [cf.enter(v, name, is_constant=True, parallel_iterations=parallel_iterations) for v in invariants]
    merges = [cf.merge([e, e])[0] for e in enters]
    pred = cf.loop_cond(cond(*merges, *invs))
    switches = [cf.switch(m, pred) for m in merges]
    exits = [cf.exit(s[0]) for s in switches]
    idents = [tf.identity(s[1]) for s in switches]
    outs = body(*idents, *invs)
    for m, o in zip(merges, outs):
        m.op._update_input(1, cf.next_iteration(o))
    return exits


def test_counter_loop():
    one_c, ten_c = tf.constant(1), tf.constant(10)
    (i,) = while_by_hand(lambda i, ten, one: i < ten, lambda i, ten, one: [i + one],
                         [tf.constant(0)], invariants=[ten_c, one_c])
    with tf.Session() as s:
        out = s.run(i)
    assert out == 10 and out.dtype == np.int32


def test_sum_loop_with_fed_bound_and_zero_iterations():
    n = tf.placeholder(tf.int32, [])
    i, total = while_by_hand(
        lambda i, s, n, one: i < n, lambda i, s, n, one: [i + one, s + tf.cast(i, tf.float32)],
        [tf.constant(0), tf.constant(0.0)], invariants=[n, tf.constant(1)],
    )
    with tf.Session() as s:
        assert s.run([i, total], {n: 5}) == [5, 10.0]
        assert s.run([i, total], {n: 0}) == [0, 0.0]


def test_constants_inside_the_loop_hang_off_the_pivot():
    """As TensorFlow's while_loop builds them: a Const inside the body has a control
    input from the body's pivot (the Identity), so it runs once per iteration."""
    def body(i, ten):
        with tf.control_dependencies([i]):
            one = tf.constant(2)
        return [i + one]

    (i,) = while_by_hand(lambda i, ten: i < ten, body, [tf.constant(0)], invariants=[tf.constant(9)])
    with tf.Session() as s:
        assert s.run(i) == 10


def test_nested_loops():
    # for a in range(3): for b in range(a + 2): total += a * b
    def outer_body(a, total, three, one):
        def inner_body(b, t, a_in, lim, one_in):
            return [b + one_in, t + a_in * b]

        b_end, t_end = while_by_hand(
            lambda b, t, a_in, lim, one_in: b < lim, inner_body,
            [a - a, total], name="inner",
            invariants=[a, a + one + one, one],
        )
        return [a + one, t_end]

    a, total = while_by_hand(lambda a, t, three, one: a < three, outer_body,
                             [tf.constant(0), tf.constant(0)], name="outer",
                             invariants=[tf.constant(3), tf.constant(1)])
    expected = sum(x * y for x in range(3) for y in range(x + 2))
    with tf.Session() as s:
        assert s.run([a, total]) == [3, expected]


def test_switch_and_merge_inside_the_loop():
    # s += i if i is even else -i, for i < 7
    def body(i, s, seven, one, two):
        even = tf.equal(tf.math.floormod(i, two), i - i)
        s_f, s_t = cf.switch(s, even)
        i_f, i_t = cf.switch(i, even)
        merged, index = cf.merge([s_f - i_f, s_t + i_t])
        return [i + one, merged]

    i, s = while_by_hand(lambda i, s, seven, one, two: i < seven, body,
                         [tf.constant(0), tf.constant(0)],
                         invariants=[tf.constant(7), tf.constant(1), tf.constant(2)])
    with tf.Session() as sess:
        assert sess.run([i, s]) == [7, sum(k if k % 2 == 0 else -k for k in range(7))]


def test_variable_assigned_in_the_body_once_per_iteration():
    v = tf.Variable(0.0)

    def body(i, n, one, ref):
        # Only loop invariants feed the update: hang it off the pivot `i` (as
        # while_loop does), or it would also run in the final, dead iteration.
        step = cf.enter(tf.constant(1.5), "loop", is_constant=True)
        with tf.control_dependencies([i]):
            upd = tf.assign_add(ref, step)
        with tf.control_dependencies([upd]):
            nxt = i + one
        return [nxt]

    ref = cf.enter(v, "loop", is_constant=True)
    enters = cf.enter(tf.constant(0), "loop")
    merge = cf.merge([enters, enters])[0]
    n_in = cf.enter(tf.constant(4), "loop", is_constant=True)
    one = cf.enter(tf.constant(1), "loop", is_constant=True)
    pred = cf.loop_cond(merge < n_in)
    f, t = cf.switch(merge, pred)
    out = cf.exit(f)
    (nxt,) = body(tf.identity(t), n_in, one, ref)
    merge.op._update_input(1, cf.next_iteration(nxt))
    assert ref.op.type == "RefEnter"
    with tf.Session() as s:
        s.run(v.initializer)
        assert s.run(out) == 4
        assert s.run(v) == 6.0
        s.run(out)
        assert s.run(v) == 12.0


def test_error_in_iteration_5_undoes_the_writes_of_earlier_iterations():
    v = tf.Variable(0.0)
    params = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    ref = cf.enter(v, "loop", is_constant=True)
    p_in = cf.enter(params, "loop", is_constant=True)
    one = cf.enter(tf.constant(1), "loop", is_constant=True)
    lim = cf.enter(tf.constant(10), "loop", is_constant=True)
    e = cf.enter(tf.constant(0), "loop")
    m = cf.merge([e, e])[0]
    f, t = cf.switch(m, cf.loop_cond(m < lim))
    out = cf.exit(f)
    i = tf.identity(t)
    upd = tf.assign_add(ref, tf.gather(p_in, i))  # index 5 is out of range
    with tf.control_dependencies([upd]):
        nxt = i + one
    m.op._update_input(1, cf.next_iteration(nxt))
    with tf.Session() as s:
        s.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match="GatherV2|Gather|indices"):
            s.run(out)
        assert s.run(v) == 0.0


def test_ten_thousand_iterations_leave_no_frame_or_iteration_behind():
    import tracemalloc

    n = tf.placeholder(tf.int32, [])
    (i,) = while_by_hand(lambda i, n, one: i < n, lambda i, n, one: [i + one],
                         [tf.constant(0)], invariants=[n, tf.constant(1)])
    sess = tf.Session()
    plan = sess._plan_for([n], [i], [])
    ex = Execution(plan, Step(sess), [np.int32(100)])
    assert isinstance(ex, FrameExecution)
    assert ex.run() == [100]
    assert not ex.root_it.children
    tracemalloc.start()
    ex = Execution(plan, Step(sess), [np.int32(10000)])
    assert ex.run() == [10000]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not ex.root_it.children
    assert peak < 1_000_000  # ~10 live iterations at a time, not 10,000


def test_dead_loop_in_an_untaken_branch_does_not_run():
    pred = tf.placeholder(tf.bool, [])
    x = tf.constant(5)
    x_f, x_t = cf.switch(x, pred)
    # The loop only runs on the true side: i counts up to x.
    lim = cf.enter(x_t, "loop", is_constant=True)
    one = cf.enter(tf.constant(1), "loop", is_constant=True)
    e = cf.enter(x_t * 0, "loop")
    m = cf.merge([e, e])[0]
    f, t = cf.switch(m, cf.loop_cond(m < lim))
    ex = cf.exit(f)
    m.op._update_input(1, cf.next_iteration(tf.identity(t) + one))
    result, index = cf.merge([x_f * 100, ex])
    with tf.Session() as s:
        assert s.run([result, index], {pred: True}) == [5, 1]
        assert s.run([result, index], {pred: False}) == [500, 0]


def _overlap_loop(parallel_iterations):
    n = tf.constant(6)

    def body(i, acc, n, one):
        slow = T.async_copy(tf.cast(i, tf.float32), delay=0.05)
        return [i + one, acc + slow]

    return while_by_hand(lambda i, acc, n, one: i < n, body, [tf.constant(0), tf.constant(0.0)],
                         parallel_iterations=parallel_iterations, invariants=[n, tf.constant(1)])


@pytest.mark.parametrize("parallel, overlaps", [(1, False), (10, True)])
def test_parallel_iterations_bounds_overlap(parallel, overlaps):
    i, acc = _overlap_loop(parallel)
    T.in_flight.reset()
    with tf.Session() as s:
        assert s.run([i, acc]) == [6, 15.0]
    # With 10 iterations in flight, a later iteration's async op starts before an
    # earlier one's has finished; with 1, never.
    assert (T.in_flight.peak > 1) == overlaps


def test_runaway_loop_hits_the_step_deadline():
    (i,) = while_by_hand(lambda i, one, t: t | (i < one), lambda i, one, t: [i + one],
                         [tf.constant(0)], invariants=[tf.constant(1), tf.constant(True)])
    with tf.Session() as s:
        with pytest.raises(errors.DeadlineExceededError):
            s.run(i, options=tf.RunOptions(timeout_in_ms=100))


def test_runaway_loop_is_cancelled_by_close():
    (i,) = while_by_hand(lambda i, one, t: t | (i < one), lambda i, one, t: [i + one],
                         [tf.constant(0)], invariants=[tf.constant(1), tf.constant(True)])
    caught = T.run_then_close(tf.Session(), i)
    assert caught and isinstance(caught[0], errors.CancelledError)


op_def("TestingFrameProbe", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"],
       shape_fn=lambda op: [op.inputs[0].shape])
not_differentiable("TestingFrameProbe")
_probe_seen: list = []


@kernel("TestingFrameProbe", step=True)
def _probe(ctx, step, x):
    _probe_seen.append(frame_of(step))
    return x


def test_kernels_and_events_know_frame_and_iteration():
    def body(i, n, one):
        return [apply_op("TestingFrameProbe", x=i, name="probe") + one]

    (i,) = while_by_hand(lambda i, n, one: i < n, body, [tf.constant(0)], name="myloop",
                         invariants=[tf.constant(3), tf.constant(1)])
    out_probe = apply_op("TestingFrameProbe", x=i, name="outside")
    _probe_seen.clear()
    events = []
    with tf.Session() as s:
        s.set_listener(events.append)
        assert s.run(out_probe) == 3
    assert _probe_seen == [("0;myloop", 0), ("0;myloop", 1), ("0;myloop", 2), ("", 0)]
    probes = [(e.frame, e.iteration) for e in events if e.node == "probe" and e.kind == "op_start"]
    assert probes == [("myloop", 0), ("myloop", 1), ("myloop", 2)]
    assert any(e.kind == "frame_enter" for e in events) and any(e.kind == "frame_exit" for e in events)


def test_ops_from_two_frames_is_an_error():
    e = cf.enter(tf.constant(1), "loop")
    bad = e + tf.constant(2)  # a root-frame constant used inside the frame
    with tf.Session() as s:
        with pytest.raises(errors.InvalidArgumentError, match="frame"):
            s.run(cf.exit(bad))


def test_run_executions_with_a_loop():
    (i,) = while_by_hand(lambda i, n, one: i < n, lambda i, n, one: [i + one],
                         [tf.constant(0)], invariants=[tf.constant(7), tf.constant(1)])
    other = T.async_copy(tf.constant(2.0))
    sess = tf.Session()
    step = Step(sess)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex1 = Execution(_plan(sess, [i]), step, [], completions=shared)
    ex2 = Execution(_plan(sess, [other]), step, [], completions=shared)
    assert run_executions([ex1, ex2]) == [[7], [2.0]]


def test_ops_without_outputs_inside_the_loop():
    def body(i, n, one):
        with tf.control_dependencies([i]):
            g = tf.no_op()
        with tf.control_dependencies([g]):
            nxt = tf.identity(i + one)
        return [nxt]

    (i,) = while_by_hand(lambda i, n, one: i < n, body, [tf.constant(0)],
                         invariants=[tf.constant(3), tf.constant(1)])
    with tf.Session() as s:
        assert s.run(i) == 3
