"""while_loop: values against Python and TensorFlow, the v1 graph layout, loop
variables as structures, shape invariants, maximum_iterations, variables in loops,
and build-time errors."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


def _run(fetches, feed=None, init=False):
    with fl.Session() as s:
        if init:
            s.run(fl.global_variables_initializer())
        return s.run(fetches, feed)


# --- layout (build only) -------------------------------------------------------------
def test_while_graph_layout_matches_tensorflow_v1(tf1):
    def layout(tf):
        g = tf.Graph()
        with g.as_default():
            a = tf.placeholder(tf.float32, shape=[], name="a")
            tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s * a),
                          [tf.constant(0), tf.constant(1.0)])
            ops = []
            for op in g.get_operations():
                attrs = {}
                if op.type == "Enter":
                    attrs = {"frame_name": op.get_attr("frame_name"),
                             "is_constant": op.get_attr("is_constant")}
                    if isinstance(attrs["frame_name"], bytes):
                        attrs["frame_name"] = attrs["frame_name"].decode()
                ops.append((op.name, op.type, [t.name for t in op.inputs],
                            sorted(c.name for c in op.control_inputs), sorted(attrs.items())))
            return ops

    assert sorted(layout(fl)) == sorted(layout(tf1))


def test_maximum_iterations_layout_names(tf1):
    def names(tf):
        g = tf.Graph()
        with g.as_default():
            tf.while_loop(lambda i: i < 10, lambda i: i + 1, [0], maximum_iterations=5)
            return sorted((op.name, op.type) for op in g.get_operations())

    assert names(fl) == names(tf1)


# --- build-time errors ---------------------------------------------------------------
def test_shape_change_without_invariant_names_variable_and_shapes():
    x = fl.constant(0.0, name="x")
    with pytest.raises(ValueError) as info:
        fl.while_loop(lambda v: fl.reduce_sum(v) < 10.0, lambda v: fl.reshape(v, [1]), [x])
    msg = str(info.value)
    assert msg.startswith(
        "Input tensor 'x:0' enters the loop with shape (), but has shape (1,) after one "
        "iteration. To allow the shape to vary across iterations, use the `shape_invariants` "
        "argument of tf.while_loop to specify a less-specific shape."
    )
    # Then where the loop was built and the invariant that accepts both shapes.
    assert "(tf.while_loop at test_while_loop.py:" in msg
    assert "shape_invariants=tf.TensorShape(None) accepts both shapes" in msg


def test_shape_error_message_matches_tensorflow(tf1):
    msgs = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            x = mod.constant([1.0], name="x")
            with pytest.raises(ValueError) as info:
                mod.while_loop(lambda v, m=mod: m.reduce_sum(v) < 10.0,
                               lambda v, m=mod: m.concat([v, v], 0), [x])
            msgs.append(str(info.value))
    # TensorFlow's words, then flowlab's advice (where, and the invariant to write).
    assert msgs[1].startswith(msgs[0])
    assert "shape_invariants=tf.TensorShape([None])" in msgs[1][len(msgs[0]):]


def test_while_loop_errors():
    with pytest.raises(TypeError, match="'cond' must be callable"):
        fl.while_loop(3, lambda i: i, [0])
    with pytest.raises(TypeError, match="'body' must be callable"):
        fl.while_loop(lambda i: i < 3, 3, [0])
    with pytest.raises(TypeError, match="'parallel_iterations' must be a positive integer"):
        fl.while_loop(lambda i: i < 3, lambda i: i + 1, [0], parallel_iterations=0)
    with pytest.raises(ValueError, match="'loop_vars' must be provided"):
        fl.while_loop(lambda i: i < 3, lambda i: i + 1, [])
    with pytest.raises(ValueError, match="same nested structure"):
        fl.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (0, 1))
    with pytest.raises(ValueError, match="'maximum_iterations' must be a scalar"):
        fl.while_loop(lambda i: i < 3, lambda i: i + 1, [0], maximum_iterations=[3])
    with pytest.raises(ValueError, match="shape invariant specified for .* not compatible"):
        fl.while_loop(lambda v: fl.reduce_sum(v) < 3, lambda v: v, [fl.constant([1])],
                      shape_invariants=[fl.TensorShape([2])])
    with pytest.raises(TypeError, match="dtype int32, but the body returns dtype float32"):
        fl.while_loop(lambda i: i < 3, lambda i: fl.cast(i, fl.float32), [0])
    with pytest.raises(ValueError, match="rank 0"):
        fl.while_loop(lambda v: v < 3, lambda v: v + 1, [fl.constant([1])])


def test_while_errors_match_tensorflow_classes(tf1):
    for bad in (
        lambda tf: tf.while_loop(lambda i: i < 3, 3, [0]),
        lambda tf: tf.while_loop(lambda i: i < 3, lambda i: i + 1, []),
        lambda tf: tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (0, 1)),
        lambda tf: tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0], maximum_iterations=[3]),
        lambda tf: tf.while_loop(lambda i: i < 10, lambda i: tf.concat([i, i], 0),
                                 [tf.constant([1])]),
    ):
        classes = []
        for mod in (tf1, fl):
            with mod.Graph().as_default():
                with pytest.raises(Exception) as info:
                    bad(mod)
                classes.append(type(info.value).__name__)
        assert classes[0] == classes[1]


# --- values ------------------------------------------------------------------------
def test_counting_loop():
    i = fl.while_loop(lambda i: i < 10, lambda i: i + 1, [0])
    assert isinstance(i, fl.Tensor)
    got = _run(i)
    assert got == 10 and isinstance(got, np.int32)


def test_loop_values_against_tensorflow(tf1):
    def build(tf):
        a = tf.placeholder(tf.float32, [], name="a")
        r1 = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s * a),
                           [tf.constant(0), tf.constant(1.0)])
        r2 = tf.while_loop(lambda x: tf.reduce_sum(x) < 100.0, lambda x: x * 2.0 + a,
                           [tf.constant([1.0, 2.0])])
        r3 = tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, tf.concat([v, [tf.cast(i, tf.float64)]], 0)),
                           [0, tf.zeros([0], tf.float64)],
                           shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
        r4 = tf.while_loop(lambda i: i < 1000, lambda i: i + 1, [tf.constant(0, tf.int64)],
                           maximum_iterations=7)
        r5 = tf.while_loop(lambda i: i > 100, lambda i: i + 1, [3])  # zero iterations
        return [r1, r2, r3, r4, r5], {a: 1.5}

    assert_same(tf1, build)


def test_nested_structures_and_return_same_structure(tf1):
    Point = collections.namedtuple("Point", "x y")

    def build(tf):
        init = (tf.constant(0), {"p": Point(tf.constant(1.0), tf.constant(2.0)), "n": [tf.constant(3)]})

        def body(i, d):
            p = d["p"]
            return i + 1, {"p": Point(p.x + p.y, p.y * 2.0), "n": [d["n"][0] * 2]}

        out = tf.while_loop(lambda i, d: i < 4, body, init)
        one = tf.while_loop(lambda i: i < 3, lambda i: [i + 1], [0], return_same_structure=True)
        return [out[0], out[1]["p"].x, out[1]["p"].y, out[1]["n"][0], one]

    assert_same(tf1, build)
    with fl.Graph().as_default():
        r = fl.while_loop(lambda i, p: i < 2, lambda i, p: (i + 1, Point(p.x + 1.0, p.y)),
                          (0, Point(fl.constant(0.0), fl.constant(5.0))))
        assert isinstance(r[1], Point)


def test_nested_loops_and_cond_in_loop(tf1):
    def build(tf):
        n = tf.placeholder(tf.int32, [], name="n")

        def outer_body(i, acc):
            def inner_body(j, a):
                a = tf.cond(tf.equal(tf.math.floormod(j, 2), 0), lambda: a + j, lambda: a - 1)
                return j + 1, a

            _, acc = tf.while_loop(lambda j, a: j < i, inner_body, [0, acc])
            return i + 1, acc

        r = tf.while_loop(lambda i, acc: i < n, outer_body, [0, 0])
        return r, {n: 6}

    assert_same(tf1, build)


def test_maximum_iterations_stops_a_runaway_loop(tf1):
    def build(tf):
        return tf.while_loop(lambda i: tf.constant(True), lambda i: i + 2, [0], maximum_iterations=50)

    assert assert_same(tf1, build) == 100


def test_loop_invariant_and_outside_values(tf1):
    def build(tf):
        w = tf.placeholder(tf.float32, [2, 2], name="w")
        b = tf.constant([0.5, -0.5])
        x = tf.while_loop(lambda k, x: k < 3,
                          lambda k, x: (k + 1, tf.tanh(tf.reshape(tf.matmul(w, tf.reshape(x, [2, 1])), [2]) + b)),
                          [0, tf.constant([1.0, 1.0])])[1]
        return x, {w: np.array([[0.5, 0.1], [-0.3, 0.8]], np.float32)}

    assert_same(tf1, build, rtol=1e-5)


def test_variables_read_and_assigned_in_loop(tf1):
    def build(tf):
        v = tf.Variable(1.0, name="v")

        def body(i):
            with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                return i + 1

        i = tf.while_loop(lambda i: i < 5, body, [0])
        with tf.control_dependencies([i]):
            out = tf.identity(v.read_value())
        return out

    assert_same(tf1, build)


def test_loop_built_in_a_control_dependencies_block_runs_after_it(tf1):
    # the assignment reaches the body's ops through per-op Identities of its Enter;
    # the body's reads see the assigned value in every iteration
    def build(tf):
        v = tf.Variable(1.0, name="v")
        x = tf.placeholder(tf.float32, [], name="x")
        with tf.control_dependencies([tf.assign(v, x)]):
            _, s = tf.while_loop(lambda i, s: i < 4,
                                 lambda i, s: (i + 1, s * 2.0 + v.read_value() + tf.constant(0.5)),
                                 [0, tf.constant(1.0)])
        return s, {x: 3.0}

    assert_same(tf1, build)


def test_cond_in_a_loop_body_under_an_outside_control_input(tf1):
    # the cond's ops drop the outside control input (it would cross the loop's frame)
    def build(tf):
        x = tf.placeholder(tf.float32, [], name="x")
        a = tf.identity(x, name="a")

        def body(i, y):
            with tf.control_dependencies([a]):
                return i + 1, tf.cond(y > 2.0, lambda: y * 2.0, lambda: y + tf.constant(1.0))

        return tf.while_loop(lambda i, y: i < 4, body, [0, x]), {x: 0.5}

    assert_same(tf1, build)


def test_loop_with_tensor_loop_var_not_in_list():
    r = fl.while_loop(lambda x: x < 100.0, lambda x: x * 3.0, fl.constant(1.0))
    assert _run(r) == 243.0


def test_parallel_iterations_and_swap_memory_accepted():
    r = fl.while_loop(lambda i, s: i < 20, lambda i, s: (i + 1, s + fl.cast(i, fl.float32)),
                      [0, 0.0], parallel_iterations=1, swap_memory=True, back_prop=False)
    assert list(_run(r)) == [20, 190.0]


def test_runaway_loop_is_stopped_by_the_step_timeout():
    i = fl.while_loop(lambda i: fl.constant(True), lambda i: i + 1, [0])
    with fl.Session() as s:
        with pytest.raises(fl.errors.DeadlineExceededError, match="timeout_in_ms"):
            s.run(i, options=fl.RunOptions(timeout_in_ms=100))
