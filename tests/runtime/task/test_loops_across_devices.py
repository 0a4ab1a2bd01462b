"""Loops across the devices of one task (`flowlab.runtime.task.handoffs`): the partitions
run as one plan of hand-offs with each loop fused, and give what the partitioned frame
path (fusion off) and TensorFlow give -- values, gradients, errors naming the op, the
undo of a failed step, the deadline, and step stats naming both devices."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.task import loop_fusion
from flowlab.runtime.task.frames import FrameExecution
from flowlab.runtime.task.partitioned_plan import PartitionedPlan


def _config(tf):
    return tf.ConfigProto(device_count={"CPU": 2})


def _run(tf, build, fused=True, feed_of=None, init=True):
    """Build in a fresh graph, run once in a two-CPU session: (values, fused runs)."""
    g = tf.Graph()
    with g.as_default():
        out = build(tf)
        feed = feed_of(out) if feed_of else None
        fetches = out[0] if feed_of else out
        ini = tf.global_variables_initializer() if init and tf.global_variables() else None
    calls: list[str] = []
    real = FrameExecution._run_fused

    def spy(self, frame):
        calls.append(frame.info.name)
        return real(self, frame)

    with tf.Session(graph=g, config=_config(tf)) as s:
        if ini is not None:
            s.run(ini)
        if tf is not fl:
            return s.run(fetches, feed), calls
        with (
            mock.patch.object(loop_fusion, "ENABLED", fused),
            mock.patch.object(FrameExecution, "_run_fused", spy),
        ):
            return s.run(fetches, feed), calls


def _same(a, b, rtol=1e-5):
    for x, y in zip(
        a if isinstance(a, (list, tuple)) else [a], b if isinstance(b, (list, tuple)) else [b]
    ):
        if isinstance(x, (list, tuple)):
            _same(x, y, rtol)
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-6)


def _split(tf):
    def body(i, x):
        with tf.device("/cpu:1"):
            y = x * 2.0 + 1.0
        with tf.device("/cpu:0"):
            return i + 1, y * 0.5

    with tf.device("/cpu:0"):
        return list(tf.while_loop(lambda i, x: i < 7, body, [tf.constant(0), tf.constant(1.0)]))


def _nested(tf):
    def outer(i, acc):
        def inner(j, a):
            with tf.device("/cpu:1"):
                a2 = a * 1.5 + tf.cast(j, tf.float32)
            return j + 1, a2

        _, a = tf.while_loop(lambda j, a: j < 3, inner, [tf.constant(0), acc])
        return i + 1, a

    with tf.device("/cpu:0"):
        return list(tf.while_loop(lambda i, a: i < 4, outer, [tf.constant(0), tf.constant(0.5)]))


def _cond_in_body(tf):
    def body(i, x):
        with tf.device("/cpu:1"):
            y = tf.cond(tf.equal(i % 3, 0), lambda: x * 2.0, lambda: x + 1.0)
        return i + 1, y

    with tf.device("/cpu:0"):
        return list(tf.while_loop(lambda i, x: i < 8, body, [tf.constant(0), tf.constant(1.0)]))


def _rnn(tf):
    if tf is fl:
        cells = fl.nn.rnn_cell
    else:
        from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as cells

    class Cell(cells.BasicRNNCell):
        def __call__(self, *a, **k):
            with tf.device("/cpu:1"):
                return super().__call__(*a, **k)

    x = tf.constant(np.random.RandomState(0).randn(3, 6, 4).astype(np.float32))
    init = tf.constant_initializer(np.random.RandomState(1).randn(9, 5).astype(np.float32) * 0.3)
    with tf.variable_scope("rnn_test", initializer=init):
        out, state = tf.nn.dynamic_rnn(Cell(5), x, dtype=tf.float32)
    loss = tf.reduce_sum(out * out)
    return [out, state, *tf.gradients(loss, [*tf.trainable_variables(), x])]


@pytest.mark.parametrize("build", [_split, _nested, _cond_in_body], ids=["split", "nested", "cond"])
def test_a_loop_across_devices_runs_fused_and_equals_the_partitioned_path_and_tensorflow(
    build, tf1
):
    fused, calls = _run(fl, build)
    general, general_calls = _run(fl, build, fused=False)
    assert calls and not general_calls
    _same(fused, general)
    tf1.disable_control_flow_v2()
    _same(fused, _run(tf1, build)[0])


def test_gradients_of_a_dynamic_rnn_with_its_cell_on_cpu1(tf1):
    fused, calls = _run(fl, _rnn)
    assert calls  # the forward and the backward loop
    _same(fused, _run(fl, _rnn, fused=False)[0])
    tf1.disable_control_flow_v2()
    _same(fused, _run(tf1, _rnn)[0], rtol=1e-4)


def test_the_step_takes_one_colocated_plan_and_says_why_not_when_a_loop_cannot_fuse():
    with fl.Graph().as_default():
        i, x = _split(fl)
        with fl.Session(config=_config(fl)) as s:
            plan = s._plan_for([], [i, x], [])
    assert isinstance(plan, PartitionedPlan) and plan.colocated is not None
    assert plan.colocated_reason == ""
    with fl.Graph().as_default():
        q = fl.FIFOQueue(10, [fl.float32], shapes=[[]])

        def body(k, v):
            with fl.device("/cpu:1"):
                enq = q.enqueue([v])
            with fl.control_dependencies([enq]):
                return k + 1, v + 1.0

        with fl.device("/cpu:0"):
            k, v = fl.while_loop(lambda k, v: k < 3, body, [fl.constant(0), fl.constant(0.0)])
        with fl.Session(config=_config(fl)) as s:
            plan = s._plan_for([], [k, v], [])
            assert plan.colocated is None and "enqueue" in plan.colocated_reason.lower()
            assert [float(a) for a in s.run([k, v])] == [3.0, 3.0]  # the partitioned path


def test_an_error_inside_the_body_names_the_op_and_undoes_the_loops_assign():
    with fl.Graph().as_default():
        v = fl.Variable(0.0)
        n = fl.placeholder(fl.int32, [])
        m = fl.placeholder(fl.float32, [None])

        def body(i):
            with fl.device("/cpu:1"):
                a = fl.assign_add(v, 1.0)
                with fl.control_dependencies([a]):
                    bad = fl.reshape(m, [2, 2], name="bad_reshape")
            with fl.control_dependencies([bad]):
                return i + 1

        with fl.device("/cpu:0"):
            i = fl.while_loop(lambda i: i < n, body, [fl.constant(0)])
        with fl.Session(config=_config(fl)) as s:
            s.run(v.initializer)
            assert s.run(i, {n: 3, m: np.zeros(4, np.float32)}) == 3
            assert s.run(v) == 3.0
            with pytest.raises(errors.InvalidArgumentError) as e:
                s.run(i, {n: 3, m: np.zeros(3, np.float32)})
            assert "bad_reshape" in str(e.value) and "CPU:1" in str(e.value)
            assert s.run(v) == 3.0  # the failed step's increment is gone


def test_a_runaway_loop_across_devices_ends_at_the_deadline():
    with fl.Graph().as_default():

        def body(i, x):
            with fl.device("/cpu:1"):
                return i + 1, x + 1.0

        with fl.device("/cpu:0"):
            _, x = fl.while_loop(lambda i, x: i >= 0, body, [fl.constant(0), fl.constant(0.0)])
        with fl.Session(config=_config(fl)) as s:
            with pytest.raises(errors.DeadlineExceededError):
                s.run(x, options=fl.RunOptions(timeout_in_ms=200))


def test_step_stats_of_a_traced_loop_across_devices_name_both_devices():
    with fl.Graph().as_default():
        i, x = _split(fl)
        with fl.Session(config=_config(fl)) as s:
            md = fl.RunMetadata()
            vals = s.run(
                [i, x], options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md
            )
            assert [float(a) for a in vals] == [float(a) for a in s.run([i, x])]
    devices = {d.device for d in md.step_stats.dev_stats if d.node_stats}
    assert any(d.endswith("CPU:0") for d in devices) and any(d.endswith("CPU:1") for d in devices)
    names = {n.node_name for d in md.step_stats.dev_stats for n in d.node_stats}
    assert any(n.startswith("while/mul") for n in names)
    # The hand-offs keep their Recv's name on the receiving device: transfers still show.
    recvs = {d.device for d in md.step_stats.dev_stats for n in d.node_stats if n.op_type == "_Recv"}
    assert any(d.endswith("CPU:1") for d in recvs)


def test_hand_offs_count_the_transfers_on_the_receiving_device():
    with fl.Graph().as_default():
        i, x = _split(fl)
        with fl.Session(config=_config(fl)) as s:
            before = s.devices[1].memory_stats()["transfers"]
            s.run([i, x])
            after = s.devices[1].memory_stats()["transfers"]
    assert after - before >= 7  # at least the value into the body, every iteration
