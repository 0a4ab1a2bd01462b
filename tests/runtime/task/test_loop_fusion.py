"""Fused loops (`flowlab.runtime.task.loop_fusion`): which frames fuse, that a fused loop
gives what the general frame path gives (values, dtypes, dead-ness, errors), and that
it keeps the frame path's guarantees (deadline, close, no growth, frame_of, undo)."""

from __future__ import annotations

import time
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as tf
from flowlab import errors
from flowlab.kernels.registry import frame_of, kernel
from flowlab.ops import control_flow_ops as cf
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.runtime.task.executor import Execution
from flowlab.runtime.task.frame_analysis import analyze
from flowlab.runtime.task.frames import FrameExecution
from flowlab.runtime.task.loop_fusion import FusedLoop, fusion_for
from flowlab.runtime.task.step import Step
from tests.runtime import testing_ops as T


def _verdicts(sess, fetches, feeds=(), targets=()):
    """{frame name: FusedLoop or the reason it is not fusible} for a step's plan."""
    plan = sess._plan_for(list(feeds), list(fetches), list(targets))
    a = analyze(plan)
    infos = {e.out_info.name: e.out_info for e in a.entries if e.kind == 2}  # Enters
    return {name: fusion_for(a, info) for name, info in infos.items()}


def _fused(sess, fetches, feeds=(), targets=()):
    return {n for n, v in _verdicts(sess, fetches, feeds, targets).items() if isinstance(v, FusedLoop)}


def _general():
    """Within it, every frame takes the general (unfused) path."""
    return mock.patch.object(FrameExecution, "_fusion", lambda self, info: None)


def _counting_fused_runs():
    calls = []
    real = FrameExecution._run_fused

    def spy(self, frame):
        calls.append(frame.info.name)
        return real(self, frame)

    return mock.patch.object(FrameExecution, "_run_fused", spy), calls


def _outcome(sess, fetches, feed):
    try:
        vals = sess.run(fetches, feed)
    except errors.OpError as e:
        return ("error", type(e).__name__, e.message)
    return ("values", [(np.asarray(v).dtype.name, np.asarray(v).tolist()) for v in vals])


# --- which frames fuse --------------------------------------------------------------------
def test_the_benchmark_loop_is_fused_and_counts():
    n = tf.placeholder(tf.int32, [], name="n")
    i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
    with tf.Session() as s:
        assert _fused(s, [i], [n]) == {"while/while_context"}
        spy, calls = _counting_fused_runs()
        with spy:
            out = [s.run(i, {n: k}) for k in (0, 1, 37)]
        assert out == [0, 1, 37] and out[2].dtype == np.int32
        assert calls == ["while/while_context"] * 3


def test_a_cond_inside_the_body_is_fused():
    n = tf.placeholder(tf.int32, [])
    i, acc = tf.while_loop(
        lambda i, a: i < n,
        lambda i, a: (i + 1, tf.cond(tf.equal(i % 2, 0), lambda: a + i, lambda: a - i)),
        [tf.constant(0), tf.constant(0)])
    with tf.Session() as s:
        assert _fused(s, [acc], [n]) == {"while/while_context"}
        assert s.run(acc, {n: 5}) == 0 - 1 + 2 - 3 + 4


def test_a_cond_in_the_loop_condition_is_not_fused_and_says_why():
    n = tf.placeholder(tf.int32, [])
    i = tf.while_loop(lambda i: tf.cond(i < 2, lambda: i < n, lambda: i < n - 1), lambda i: i + 1,
                      [tf.constant(0)])
    with tf.Session() as s:
        (verdict,) = _verdicts(s, [i], [n]).values()
        assert isinstance(verdict, str) and "in the loop condition" in verdict
        assert s.run(i, {n: 5}) == 4


def test_nested_loops_fuse_into_one_call():
    def outer(a, total):
        _, t = tf.while_loop(lambda b, t: b < a, lambda b, t: (b + 1, t + a * b), [0, total])
        return a + 1, t

    a, total = tf.while_loop(lambda a, t: a < 4, outer, [tf.constant(0), tf.constant(0)])
    with tf.Session() as s:
        assert _fused(s, [total]) == {"while/while/while_context", "while/while_context"}
        spy, calls = _counting_fused_runs()
        with spy:
            assert s.run([a, total]) == [4, sum(x * y for x in range(4) for y in range(x))]
        assert calls == ["while/while_context"]  # the inner loop is a call inside it


def test_gradient_loops_fuse():
    x = tf.constant(1.5)
    _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * x + 1.0), [0, x])
    (g,) = tf.gradients(y, [x])
    with tf.Session() as s:
        spy, calls = _counting_fused_runs()
        with spy:
            fused_vals = s.run([y, g])
        with _general():
            assert s.run([y, g]) == fused_vals
        assert len(set(calls)) == 2  # the forward loop (with its pushes) and the backward one
    xs = 1.5
    yv, gv = xs, 1.0
    for _ in range(4):
        yv, gv = yv * xs + 1.0, gv * xs + yv
    assert fused_vals == [pytest.approx(yv), pytest.approx(gv)]


def test_two_expensive_kernels_with_a_pool_take_the_general_path():
    w = tf.constant(np.eye(3, dtype=np.float32))

    def body(i, x):
        return i + 1, tf.matmul(x, w) + tf.matmul(w, x)

    _, x = tf.while_loop(lambda i, x: i < 3, body, [0, tf.ones([3, 3])])
    spy, calls = _counting_fused_runs()
    with spy:
        with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2)) as s:
            pooled = s.run(x)
        with tf.Session() as s:
            single = s.run(x)
    assert len(calls) == 1  # only the session without a pool fused it
    np.testing.assert_array_equal(pooled, single)
    np.testing.assert_array_equal(single, np.full((3, 3), 8.0, np.float32))


# --- fused equals general ------------------------------------------------------------------
_OPS = ["add", "sub", "mul", "max", "min"]


def _apply(op, x, y):
    return {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply,
            "max": tf.maximum, "min": tf.minimum}[op](x, y)


program = st.fixed_dictionaries({
    "dtypes": st.lists(st.sampled_from(["int32", "float32", "float64"]), min_size=1, max_size=3),
    "inits": st.lists(st.integers(-3, 3), min_size=3, max_size=3),
    "updates": st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 2), st.integers(-2, 2)),
                        min_size=3, max_size=3),
    "limit_from_var": st.booleans(),
    "max_iters": st.one_of(st.none(), st.integers(0, 5)),
    "in_branch": st.sampled_from([None, True, False]),
    "nested": st.booleans(),
    "conds": st.integers(0, 2),  # conds nested around the last variable's update
    "fetch_index": st.booleans(),
})


def _nested_conds(i, x, y, depth):
    """`depth` conds nested in each other's true branch around x."""
    if depth == 0:
        return x
    taken = tf.equal(tf.math.floormod(i, depth + 1), 0)
    return tf.cond(taken, lambda: _nested_conds(i, x + tf.constant(depth, x.dtype), y, depth - 1),
                   lambda: x - y)


def _build(p):
    """A loop over len(dtypes) variables plus a counter; optionally with an inner loop,
    maximum_iterations, inside a cond branch, with a Merge's index fetched."""
    n = tf.placeholder(tf.int32, [], name="n")
    pred = tf.placeholder(tf.bool, [], name="pred")
    dts = [tf.as_dtype(d) for d in p["dtypes"]]

    def loop():
        init = [tf.constant(0)] + [tf.constant(v, dt) for v, dt in zip(p["inits"], dts)]

        def cond(i, *vs):
            c = i < n
            if p["limit_from_var"]:
                c = tf.logical_and(c, tf.cast(vs[0], tf.float64) < 1000.0)
            return c

        def body(i, *vs):
            out = []
            for k, v in enumerate(vs):
                op, src, c = p["updates"][k]
                other = tf.cast(vs[src % len(vs)], v.dtype)
                nv = _apply(op, v, other + tf.constant(c, v.dtype))
                if k == len(vs) - 1:
                    nv = _nested_conds(i, nv, v, p["conds"])
                if p["nested"] and k == 0:
                    _, nv = tf.while_loop(lambda j, x: j < i, lambda j, x: (j + 1, x + tf.cast(j, x.dtype)),
                                          [0, nv])
                out.append(nv)
            return [i + 1] + out

        return tf.while_loop(cond, body, init, maximum_iterations=p["max_iters"])

    if p["in_branch"] is None:
        outs = loop()
        fetches = list(outs)
    else:
        x_f, x_t = cf.switch(tf.constant(7), pred)
        outs = loop() if p["in_branch"] else None
        if outs is None:
            outs = [x_f]
        # The loop hangs off the taken (true) side only through its pivot.
        merged, index = cf.merge([x_f * 100, tf.identity(outs[0])])
        fetches = [merged, index] if p["fetch_index"] else [merged]
        if p["in_branch"]:
            fetches.append(outs[0])  # dead when the branch is not taken
    return n, pred, fetches


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program, st.integers(0, 5), st.booleans())
def test_fused_and_general_paths_agree(p, n_val, pred_val):
    g = tf.Graph()
    with g.as_default():
        n, pred, fetches = _build(p)
    with tf.Session(graph=g) as s:
        feed = {n: n_val, pred: pred_val}
        fused = _outcome(s, fetches, feed)
        with _general():
            general = _outcome(s, fetches, feed)
    assert fused == general


def test_a_loop_in_an_untaken_branch_falls_back_and_is_dead():
    pred = tf.placeholder(tf.bool, [])
    x_f, x_t = cf.switch(tf.constant(5), pred)
    lim = cf.enter(x_t, "loop", is_constant=True)
    one = cf.enter(tf.constant(1), "loop", is_constant=True)
    e = cf.enter(x_t * 0, "loop")
    m = cf.merge([e, e])[0]
    f, t = cf.switch(m, cf.loop_cond(m < lim))
    ex = cf.exit(f)
    m.op._update_input(1, cf.next_iteration(tf.identity(t) + one))
    result, index = cf.merge([x_f * 100, ex])
    with tf.Session() as s:
        assert _fused(s, [result]) == {"loop"}
        assert s.run([result, index], {pred: True}) == [5, 1]
        assert s.run([result, index], {pred: False}) == [500, 0]
        with pytest.raises(errors.InvalidArgumentError, match="dead"):
            s.run(ex, {pred: False})


def test_an_enter_that_waits_on_the_loop_itself_falls_back():
    """A constant Enter fed from the loop's own Exit can only arrive after the loop:
    the fused instance would wait forever; it hands over to the general path."""
    e = cf.enter(tf.constant(0), "loop")
    lim = cf.enter(tf.constant(3), "loop", is_constant=True)
    one = cf.enter(tf.constant(1), "loop", is_constant=True)
    m = cf.merge([e, e])[0]
    f, t = cf.switch(m, cf.loop_cond(m < lim))
    ex = cf.exit(f)
    m.op._update_input(1, cf.next_iteration(tf.identity(t) + one))
    late = cf.enter(ex + 1, "loop", is_constant=True)
    unused = late + late  # an op of the loop frame that waits for `late`
    handed_over = []
    real = FrameExecution._unfuse

    def spy(self, frame):
        handed_over.append(frame.info.name)
        return real(self, frame)

    with tf.Session() as s:
        assert _fused(s, [ex], targets=[unused.op]) == {"loop"}
        with mock.patch.object(FrameExecution, "_unfuse", spy):
            assert s.run([ex, unused.op]) == [3, None]
    assert handed_over == ["loop"]


# --- guarantees of the frame path, on the fused path ---------------------------------------
def test_ten_thousand_fused_iterations_make_no_iteration_and_leave_nothing():
    import tracemalloc

    n = tf.placeholder(tf.int32, [])
    i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
    sess = tf.Session()
    plan = sess._plan_for([n], [i], [])
    assert Execution(plan, Step(sess), [np.int32(3)]).run() == [3]
    made = []
    real_init = __import__("flowlab.runtime.task.frame_state", fromlist=["_Iteration"])._Iteration.__init__

    def counting_init(self, frame, num):
        made.append(num)
        real_init(self, frame, num)

    tracemalloc.start()
    with mock.patch("flowlab.runtime.task.frame_state._Iteration.__init__", counting_init):
        ex = Execution(plan, Step(sess), [np.int32(10000)])
        assert ex.run() == [10000]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert made == [0]  # the root frame's only
    assert not ex.root_it.children and peak < 200_000


def _runaway():
    t = tf.placeholder_with_default(True, [])
    return tf.while_loop(lambda i: tf.logical_or(t, i < 1), lambda i: i + 1, [tf.constant(0)])


def test_a_fused_runaway_loop_hits_the_step_deadline():
    i = _runaway()
    with tf.Session() as s:
        assert _fused(s, [i]) == {"while/while_context"}
        t0 = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            s.run(i, options=tf.RunOptions(timeout_in_ms=100))
        assert time.monotonic() - t0 < 5


def test_a_fused_runaway_loop_is_cancelled_by_close():
    i = _runaway()
    s = tf.Session()
    assert _fused(s, [i]) == {"while/while_context"}
    caught = T.run_then_close(s, i)
    assert caught and isinstance(caught[0], errors.CancelledError)


op_def("TestingFusedProbe", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"],
       shape_fn=lambda op: [op.inputs[0].shape])
not_differentiable("TestingFusedProbe")
_seen: list = []


@kernel("TestingFusedProbe", step=True)
def _probe(ctx, step, x):
    _seen.append(frame_of(step))
    return x


def test_kernels_see_frame_and_iteration_on_the_fused_path():
    def outer(a):
        inner = tf.while_loop(lambda b: b < 2, lambda b: apply_op("TestingFusedProbe", x=b, name="probe") + 1,
                              [tf.constant(0)], name="inner")
        return a + inner - 1

    a = tf.while_loop(lambda a: a < 2, outer, [tf.constant(0)], name="outer")
    _seen.clear()
    with tf.Session() as s:
        spy, calls = _counting_fused_runs()
        with spy:
            assert s.run(a) == 2
    assert calls == ["outer/while_context"]
    assert _seen == [(f"0;outer/while_context;{k};outer/inner/while_context", it)
                     for k in (0, 1) for it in (0, 1)]


def test_an_error_in_a_fused_iteration_names_the_op_and_undoes_the_writes():
    v = tf.Variable(0.0)
    params = tf.constant([1.0, 2.0, 3.0])

    def body(i):
        upd = tf.assign_add(v, tf.gather(params, i, name="pick"))
        with tf.control_dependencies([upd]):
            return i + 1

    i = tf.while_loop(lambda i: i < 5, body, [tf.constant(0)])
    with tf.Session() as s:
        s.run(v.initializer)
        assert _fused(s, [i]) == {"while/while_context"}
        with pytest.raises(errors.InvalidArgumentError, match="while/pick"):
            s.run(i)
        assert s.run(v) == 0.0


def test_an_enter_from_an_asynchronous_op_is_waited_for():
    slow = T.async_copy(tf.constant(4), delay=0.02)
    i = tf.while_loop(lambda i: i < slow, lambda i: i + 1, [tf.constant(0)])
    with tf.Session() as s:
        spy, calls = _counting_fused_runs()
        with spy:
            assert s.run(i) == 4
        assert calls == ["while/while_context"]


def test_a_listener_sees_every_iteration():
    i = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    events = []
    with tf.Session() as s:
        s.set_listener(events.append)
        assert s.run(i) == 3
    adds = [e.iteration for e in events if e.kind == "op_start" and e.op_type == "AddV2"]
    assert adds == [0, 1, 2]


def test_a_variable_assigned_in_one_branch_of_a_cond_in_the_body():
    v = tf.Variable(0.0)

    def body(i):
        upd = tf.cond(tf.equal(tf.math.floormod(i, 3), 0),
                      lambda: tf.assign_add(v, tf.cast(i, tf.float32)), lambda: tf.identity(v))
        with tf.control_dependencies([upd]):
            return i + 1

    i = tf.while_loop(lambda i: i < 10, body, [tf.constant(0)])
    with tf.Session() as s:
        assert _fused(s, [i]) == {"while/while_context"}
        s.run(v.initializer)
        assert s.run(i) == 10 and s.run(v) == 0.0 + 3 + 6 + 9
        with _general():
            assert s.run(i) == 10 and s.run(v) == 36.0


def test_gradient_of_a_cond_inside_a_loop_fuses_both_loops():
    x = tf.constant(1.25)

    def body(i, y):
        return i + 1, tf.cond(tf.equal(tf.math.floormod(i, 2), 0), lambda: y * x, lambda: y + x)

    _, y = tf.while_loop(lambda i, y: i < 5, body, [0, x])
    (g,) = tf.gradients(y, [x])
    with tf.Session() as s:
        spy, calls = _counting_fused_runs()
        with spy:
            fused_vals = s.run([y, g])
        with _general():
            assert s.run([y, g]) == fused_vals
        assert len(set(calls)) == 2


def test_an_error_in_an_inner_fused_loop_names_its_op():
    params = tf.constant([1.0, 2.0])

    def outer(a, acc):
        _, acc2 = tf.while_loop(lambda b, t: b < a, lambda b, t: (b + 1, t + tf.gather(params, b, name="pick")),
                                [0, acc], name="inner")
        return a + 1, acc2

    _, acc = tf.while_loop(lambda a, t: a < 4, outer, [tf.constant(0), tf.constant(0.0)], name="outer")
    with tf.Session() as s:
        assert _fused(s, [acc]) == {"outer/while_context", "outer/inner/while_context"}
        with pytest.raises(errors.InvalidArgumentError, match="outer/inner/pick"):
            s.run(acc)
        with _general(), pytest.raises(errors.InvalidArgumentError, match="outer/inner/pick"):
            s.run(acc)


def test_a_variable_read_entering_fused_loops_is_read_by_each_reader():
    # v/read enters the outer and the inner loop and a cond inside the inner body: the
    # plan forwards the variable (runtime/plan.py), the fused loops read it per reader,
    # so each Sum after an update sees it, as on the general path and in TensorFlow.
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    r = v.value()

    def inner(j, b):
        upd = tf.assign_add(v, tf.ones([3]) * (b * 0.0 + 1.0))
        with tf.control_dependencies([upd]):
            s = tf.cond(tf.equal(j, 0), lambda: tf.reduce_sum(r), lambda: tf.reduce_sum(r) * 10.0)
        return j + 1, b + s

    def outer(i, a):
        return i + 1, tf.while_loop(lambda j, b: j < 2, inner, [0, a], name="inner")[1]

    _, total = tf.while_loop(lambda i, a: i < 2, outer, [0, 0.0], name="outer")
    with tf.Session() as s:
        assert _fused(s, [total]) == {"outer/while_context", "outer/inner/while_context"}
        s.run(v.initializer)
        spy, calls = _counting_fused_runs()
        with spy:
            assert s.run(total) == 6.0 + 90.0 + 12.0 + 150.0
        assert calls
        plan = s._plan_for([], [total], [])
        a = analyze(plan)
        inner_info = next(e.out_info for e in a.entries if e.kind == 2 and e.out_info.name.endswith("inner/while_context"))
        assert ".read()" in fusion_for(a, inner_info).source
        s.run(v.initializer)
        with _general():
            assert s.run(total) == 258.0
