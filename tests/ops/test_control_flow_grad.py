"""Gradients through while loops (backpropagation through time with stacks), nested
loops and conds inside loops: finite differences, TensorFlow, and the stack ops."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops import stack_ops
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(11)


def _run(fetches, feed=None):
    with fl.Session() as s:
        return s.run(fetches, feed)


# --- TABLE entries: finite differences through whole loops -----------------------------
@grad_case("Enter", RS.randn(3), RS.randn(3))
def _(tf, a, b):
    # a is a loop variable, b a loop invariant (a constant Enter).
    return tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.sin(x) * b + x), [0, a])[1]


@grad_case("Exit", RS.randn(2, 2))
def _(tf, a):
    return tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, tf.matmul(x, x) * 0.5), [0, a])[1]


@grad_case("NextIteration", RS.randn(4))
def _(tf, a):
    # A data-dependent trip count: the gradient follows the iterations that ran.
    def body(x, y):
        return x * 1.5, y + tf.reduce_sum(x * x)

    x, y = tf.while_loop(lambda x, y: y < 50.0, body, [a, tf.constant(0.0, tf.float64)])
    return x + y


@grad_case("NextIteration", RS.randn(3))
def _(tf, a):
    # A nested loop: the inner loop's stacks are filled once per outer iteration.
    def outer(i, x):
        _, x = tf.while_loop(lambda j, y: j < i + 1, lambda j, y: (j + 1, tf.tanh(y) + y * 0.5),
                             [0, x])
        return i + 1, x

    return tf.while_loop(lambda i, x: i < 3, outer, [0, a])[1]


@grad_case("Merge", RS.randn(3))
def _(tf, a):
    # A cond inside a loop: the predicate of each iteration is saved for the backward loop.
    def body(i, x):
        x = tf.cond(tf.equal(tf.math.floormod(i, 2), 0), lambda: x * x, lambda: tf.sin(x) * 2.0)
        return i + 1, x

    return tf.while_loop(lambda i, x: i < 4, body, [0, a])[1]


# --- against TensorFlow ---------------------------------------------------------------------
def test_while_gradient_against_tensorflow(tf1):
    def build(tf):
        a = tf.placeholder(tf.float32, [], name="a")
        x0 = tf.placeholder(tf.float32, [2], name="x0")
        _, s = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * a + tf.sin(s)), [0, x0])
        y = tf.reduce_sum(s * s)
        return [y] + tf.gradients(y, [a, x0]), {a: 0.7, x0: np.array([0.3, -1.2], np.float32)}

    assert_same(tf1, build, rtol=1e-4)


def test_bptt_rnn_gradient_against_tensorflow(tf1):
    data = [RS.randn(6, 3).astype(np.float32), RS.randn(3, 4).astype(np.float32) * 0.5,
            RS.randn(4, 4).astype(np.float32) * 0.5]

    def build(tf):
        xs = tf.placeholder(tf.float32, [6, 3], name="xs")
        w = tf.placeholder(tf.float32, [3, 4], name="w")
        u = tf.placeholder(tf.float32, [4, 4], name="u")

        def body(t, h):
            x = tf.reshape(tf.gather(xs, t), [1, 3])
            return t + 1, tf.tanh(tf.matmul(x, w) + tf.matmul(h, u))

        _, h = tf.while_loop(lambda t, h: t < 6, body, [0, tf.zeros([1, 4])])
        loss = tf.reduce_sum(h * h)
        return [loss] + tf.gradients(loss, [w, u, xs]), dict(zip([xs, w, u], data))

    assert_same(tf1, build, rtol=1e-4, atol=1e-5)


def test_nested_loop_gradient_against_tensorflow(tf1):
    def build(tf):
        a = tf.placeholder(tf.float32, [], name="a")

        def outer(i, x):
            _, x = tf.while_loop(lambda j, y: j < i, lambda j, y: (j + 1, y * a + 0.1), [0, x])
            return i + 1, x

        _, r = tf.while_loop(lambda i, x: i < 4, outer, [0, tf.constant(1.0)])
        return [r] + tf.gradients(r, a), {a: 0.9}

    assert_same(tf1, build, rtol=1e-5)


def test_cond_in_loop_gradient_against_tensorflow(tf1):
    def build(tf):
        a = tf.placeholder(tf.float32, [], name="a")

        def body(i, x):
            x = tf.cond(x > 2.0, lambda: x * 0.5, lambda: x * a + 1.0)
            return i + 1, x

        _, r = tf.while_loop(lambda i, x: i < 6, body, [0, tf.constant(1.0)])
        return [r] + tf.gradients(r, a), {a: 1.3}

    assert_same(tf1, build, rtol=1e-5)


def test_cond_in_loop_gradient_of_unknown_shapes_against_tensorflow(tf1):
    # the untaken branch's zeros come from a stacked Shape of that side's input; the
    # branch taken changes from iteration to iteration and between the elements' sums
    def build(tf):
        x = tf.placeholder(tf.float32, [None], name="x")

        def body(i, y):
            return i + 1, tf.cond(tf.reduce_sum(y) > 2.0, lambda: y * x, lambda: y + x)

        _, r = tf.while_loop(lambda i, y: i < 5, body, [0, x])
        return [r] + tf.gradients(tf.reduce_sum(r * r), x), {x: np.array([0.5, -0.25, 0.75], np.float32)}

    assert_same(tf1, build, rtol=1e-5)


def test_loop_gradient_through_outputs_without_gradient_against_tensorflow(tf1):
    # Split outputs the body drops get zeros in the backward loop: a Const for a known
    # shape, a stacked Shape for an unknown one
    def build(tf):
        x = tf.placeholder(tf.float32, [4], name="x")
        u = tf.placeholder(tf.float32, [None, 2], name="u")

        def body(i, a, b):
            p, _ = tf.split(a, 2)
            q, _ = tf.split(b, 2, axis=1)
            return i + 1, tf.concat([p, p * 2.0], 0) * 1.5, tf.concat([q * 3.0, q], 1) * 0.5

        _, a, b = tf.while_loop(lambda i, a, b: i < 3, body, [0, x, u])
        loss = tf.reduce_sum(a * a) + tf.reduce_sum(b * tf.constant([1.0, -2.0]))
        return tf.gradients(loss, [x, u]), {x: np.array([1.0, 2.0, -1.0, 0.5], np.float32),
                                            u: np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]], np.float32)}

    assert_same(tf1, build, rtol=1e-5)


def test_while_in_cond_gradient_against_tensorflow(tf1):
    def build(tf, pv):
        a = tf.placeholder(tf.float32, [], name="a")
        p = tf.placeholder(tf.bool, [], name="p")
        y = tf.cond(p, lambda: tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * a),
                                             [0, a])[1],
                    lambda: a * 3.0)
        return [y] + tf.gradients(y, a), {a: 1.5, p: pv}

    for pv in (True, False):
        assert_same(tf1, lambda tf, pv=pv: build(tf, pv))


def test_inner_loop_reading_outer_values_with_cond_against_tensorflow(tf1):
    def build(tf):
        a = tf.placeholder(tf.float32, [], name="a")

        def body(i, s):
            s2 = tf.while_loop(lambda j, t: j < 2, lambda j, t: (j + 1, t * a + s), [0, s])[1]
            return i + 1, tf.cond(s2 > 3.0, lambda: s2 * 0.5, lambda: s2)

        y = tf.while_loop(lambda i, s: i < 3, body, [0, a])[1]
        return [y] + tf.gradients(y, a), {a: 1.1}

    assert_same(tf1, build, rtol=1e-5)


def test_second_order_loop_gradient_is_refused_as_in_tensorflow():
    a = fl.placeholder(fl.float32, [])
    y = fl.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * a), [0, a])[1]
    (g,) = fl.gradients(y, a)
    with pytest.raises(TypeError, match="Second-order gradient for while loops not supported"):
        fl.gradients(g, a)


def test_back_prop_false_gives_no_gradient():
    a = fl.placeholder(fl.float32, [])
    r = fl.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * a), [0, a], back_prop=False)[1]
    assert fl.gradients(r, a) == [None]


def test_gradient_of_loop_with_unused_loop_variable():
    a = fl.placeholder(fl.float64, [])
    # y never depends on z; z's gradient is zero and does not disturb a's.
    _, y, z = fl.while_loop(lambda i, y, z: i < 3, lambda i, y, z: (i + 1, y * a, z + 1.0),
                            [0, fl.constant(1.0, fl.float64), a])
    g = fl.gradients(y, a)[0]
    np.testing.assert_allclose(_run(g, {a: 2.0}), 3 * 2.0 ** 2)


# --- the stack ops ---------------------------------------------------------------------------
def test_stack_push_pop_is_lifo_and_per_step():
    h = stack_ops.stack_v2(-1, fl.float32, stack_name="s")
    p1 = stack_ops.stack_push_v2(h, 1.0)
    with fl.control_dependencies([p1]):
        p2 = stack_ops.stack_push_v2(h, 2.0)
    with fl.control_dependencies([p2]):
        a = stack_ops.stack_pop_v2(h, fl.float32)
    with fl.control_dependencies([a]):
        b = stack_ops.stack_pop_v2(h, fl.float32)
    with fl.Session() as s:
        assert s.run([a, b]) == [2.0, 1.0]
        assert s.run([a, b]) == [2.0, 1.0]  # a new stack each step


def test_stack_errors():
    h = stack_ops.stack_v2(1, fl.int32, stack_name="small")
    p = stack_ops.stack_push_v2(h, 1)
    with fl.control_dependencies([p]):
        p2 = stack_ops.stack_push_v2(h, 2)
    with pytest.raises(fl.errors.InvalidArgumentError, match=r"Stack\[small\] overflowed its max_size \(1\)"):
        _run(p2)
    with pytest.raises(fl.errors.InvalidArgumentError, match=r"Stack\[small\] is empty"):
        _run(stack_ops.stack_pop_v2(h, fl.int32))
    close = stack_ops.stack_close_v2(h)
    with fl.control_dependencies([close]):
        late = stack_ops.stack_pop_v2(h, fl.int32)
    with pytest.raises(fl.errors.InvalidArgumentError, match="already been closed"):
        _run(late)


def test_training_through_a_loop_against_tensorflow(tf1):
    # Adam on a dense and a gathered (sparse) variable used inside a loop body.
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            w = tf.Variable([[0.5, -0.2], [0.1, 0.3]], name="w")
            e = tf.Variable(np.arange(10, dtype=np.float32).reshape(5, 2) * 0.1, name="e")

            def body(t, h):
                x = tf.gather(e, tf.math.floormod(t, 5))
                return t + 1, tf.tanh(tf.matmul(tf.reshape(x + h, [1, 2]), w)[0])

            _, h = tf.while_loop(lambda t, h: t < 4, body, [0, tf.zeros([2])])
            loss = tf.reduce_sum(h * h)
            train = tf.train.AdamOptimizer(0.1).minimize(loss)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                return s.run([loss, w, e])

    for want, got in zip(run(tf1), run(fl)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
