"""The backward loop is TensorFlow's graph: op names, types and frame names of the
gradient of a while_loop compared with TensorFlow 1.x's (values too).

TensorFlow's layout (flowlab/ops/control_flow_grad.py): counters f_count/b_count in
the `gradients` scope, per loop variable Exit_k_grad/b_exit -> Switch_k_grad/b_switch
-> Merge_k_grad/Switch -> Enter_k_grad/Exit, per loop invariant an Enter_grad/b_acc
loop, stacks f_acc/StackPushV2/StackPopV2 in the scope of the gradient op reading the
forward value, b_sync after the pops.  Gradient functions of other op families name
some of their own helper constants differently (Sum_grad/shape vs Sum_grad/Const);
these tests compare everything a loop gradient adds: the control-flow and stack ops.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.ops.test_functional_ops import _WHY

pytestmark = pytest.mark.skipif(_WHY is not None, reason=str(_WHY))

_PLUMBING = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond", "StackV2",
             "StackPushV2", "StackPopV2", "ControlTrigger"}


def _frame(op):
    if op.type != "Enter":
        return None
    f = op.get_attr("frame_name")
    return f.decode() if isinstance(f, bytes) else f


def _graph(tf, build, feed_value):
    """Build under `tf`; ({(name, type, frame)} of every op, the gradient values)."""
    g = tf.Graph()
    with g.as_default():
        grads = build(tf)
        ops = {(op.name, op.type, _frame(op)) for op in g.get_operations()}
        with tf.Session(graph=g) as sess:
            if tf.global_variables():  # the same weights under both
                from tests.nn.test_rnn_cell import _assign_all

                sess.run(_assign_all(tf, tf.global_variables()))
            values = sess.run(grads, {g.get_tensor_by_name("x:0"): feed_value})
    return ops, values


def _compare(tf1, build, feed_value, rtol=1e-5):
    (tf_ops, tf_vals), (fl_ops, fl_vals) = (_graph(tf1, build, feed_value),
                                            _graph(fl, build, feed_value))
    for a, b in zip(tf_vals, fl_vals):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-6)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    return tf_ops, fl_ops


def _plumbing(ops):
    return {o for o in ops if o[1] in _PLUMBING}


def test_scalar_loop_gradient_graph_is_tensorflows(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [], name="x")
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])
        return tf.gradients(y, x)

    tf_ops, fl_ops = _compare(tf1, build, np.float32(2.0))
    assert fl_ops == tf_ops
    assert ("gradients/while/Switch_1_grad_1/NextIteration", "NextIteration", None) in fl_ops
    assert ("gradients/while/mul_grad/Mul_1/f_acc", "StackV2", None) in fl_ops


def test_matrix_loop_with_invariants_and_maximum_iterations(tf1):
    """Two float loop variables, a matrix loop invariant (accumulated in b_acc),
    maximum_iterations (a second counter), Tanh and MatMul gradients reading stacks."""
    def build(tf):
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        w = tf.constant(np.array([[0.5, -0.2], [0.1, 0.4]], np.float32), name="w")

        def body(i, a, b):
            return i + 1, tf.tanh(tf.matmul(a, w) + b), b * 0.9 + tf.reduce_sum(a)

        _, a, b = tf.while_loop(lambda i, a, b: i < 4, body, (0, x, tf.ones([2, 2])),
                                maximum_iterations=3)
        return tf.gradients(tf.reduce_sum(a * b), [x, w])

    tf_ops, fl_ops = _compare(tf1, build, np.arange(4, dtype=np.float32).reshape(2, 2) / 4)
    assert _plumbing(fl_ops) == _plumbing(tf_ops)
    names = {o[0] for o in fl_ops}
    assert {"gradients/while/MatMul/Enter_grad/b_acc_3", "gradients/b_count_3",
            "gradients/while/Enter_2_grad/Exit", "gradients/f_count_2"} <= names


def test_lstm_dynamic_rnn_gradient_loop_is_tensorflows(tf1):
    """The backward loop of an LSTM dynamic_rnn: the same counters, loop variables,
    stacks and frame names as TensorFlow's, op for op: the loop invariant `zeros` (the
    copy-through output of finished sequences) depends on neither x nor the weights,
    so it gets no accumulator in either."""
    from tests.nn.test_rnn_cell import _tf_cells

    tf_cells = _tf_cells(tf1)

    def build(tf):
        cells = tf_cells if tf is tf1 else fl.nn.rnn_cell
        x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
        out, _ = tf.nn.dynamic_rnn(cells.BasicLSTMCell(3), x, sequence_length=[3, 1],
                                   dtype=tf.float32)
        return tf.gradients(tf.reduce_sum(out * out), [x, *tf.global_variables()])

    xv = np.random.RandomState(3).randn(2, 3, 4).astype(np.float32)
    tf_ops, fl_ops = _compare(tf1, build, xv, rtol=1e-4)
    assert _plumbing(fl_ops) == _plumbing(tf_ops)
