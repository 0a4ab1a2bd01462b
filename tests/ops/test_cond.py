"""cond and case: values against Python, TensorFlow's v1 graph layout, errors, and
gradients (the backward pass takes the branch the forward pass took)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(7)


def _run(fetches, feed=None):
    with fl.Session() as s:
        return s.run(fetches, feed)


# --- values ------------------------------------------------------------------------
@pytest.mark.parametrize("v", [3.0, -2.0, 0.0])
def test_cond_takes_one_branch(v):
    x = fl.placeholder(fl.float32, [])
    y = fl.constant(2.0)
    r = fl.cond(x > 0, lambda: x * y, lambda: fl.constant(1.0) - x)
    got = _run(r, {x: v})
    assert got == np.float32(v * 2.0 if v > 0 else 1.0 - v)
    assert isinstance(got, np.float32)


def test_cond_values_and_dtypes_against_tensorflow(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [2], name="x")
        i = tf.placeholder(tf.int32, [], name="i")
        a = tf.cond(i > 0, lambda: x * 2.0, lambda: -x)
        b = tf.cond(i < 0, lambda: (i, x), lambda: (i * 3, x + 1.0))
        c = tf.cond(tf.reduce_sum(x) > 0, lambda: {"p": tf.cast(i, tf.int64)},
                    lambda: {"p": tf.constant(7, tf.int64)})
        d = tf.cond(i > 1, lambda: [x], lambda: [x * x])  # unpacked (strict=False)
        e = tf.cond(i > 1, lambda: [x], lambda: [x * x], strict=True)
        return [a, b, c, d, e], {x: np.array([1.5, -2.0], np.float32), i: 2}

    assert_same(tf1, build)

    def build_neg(tf):
        out, feed = build(tf)
        feed = {k: (-3 if v == 2 else v) for k, v in feed.items() if not isinstance(v, np.ndarray)} | \
            {k: v for k, v in feed.items() if isinstance(v, np.ndarray)}
        return out, feed

    assert_same(tf1, build_neg)


def test_cond_outside_values_run_whatever_the_branch():
    # An outside op a branch uses runs in both cases; its Switch only gates the branch.
    x = fl.placeholder(fl.float32, [])
    p = fl.placeholder(fl.bool, [])
    outside = x * 10.0
    r = fl.cond(p, lambda: outside + 1.0, lambda: fl.constant(0.0))
    assert _run([r, outside], {x: 2.0, p: True}) == [21.0, 20.0]
    assert _run([r, outside], {x: 2.0, p: False}) == [0.0, 20.0]


def test_cond_identity_branches_and_namedtuple():
    Pair = collections.namedtuple("Pair", "a b")
    x = fl.placeholder(fl.float32, [])
    r = fl.cond(x > 0, lambda: Pair(x, x + 1.0), lambda: Pair(x - 1.0, x))
    assert isinstance(r, Pair)
    assert _run(list(r), {x: 1.0}) == [1.0, 2.0]
    assert _run(list(r), {x: -1.0}) == [-2.0, -1.0]


def test_nested_cond_and_case(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [], name="x")
        n = tf.cond(x > 0, lambda: tf.cond(x > 5, lambda: x * 100.0, lambda: x * 10.0),
                    lambda: tf.cond(x < -5, lambda: -x, lambda: x - 1.0))
        c = tf.case([(x > 5, lambda: x * 2.0), (x > 0, lambda: x + 0.5)], default=lambda: x * 0.0)
        d = tf.case({x < 0: lambda: tf.constant(1)}, default=lambda: tf.constant(2))
        return [n, c, d]

    for v in (7.0, 2.0, -1.0, -9.0):
        def with_feed(tf, v=v):
            out = build(tf)
            x = tf.get_default_graph().get_tensor_by_name("x:0")
            return out, {x: v}

        assert_same(tf1, with_feed)


def test_case_without_default_uses_last_pair():
    x = fl.placeholder(fl.float32, [])
    r = fl.case([(x > 5, lambda: x * 2.0), (x > 0, lambda: x + 1.0)])
    assert _run(r, {x: 7.0}) == 14.0
    assert _run(r, {x: 2.0}) == 3.0
    with pytest.raises(fl.errors.InvalidArgumentError, match="None of conditions evaluated as True"):
        _run(r, {x: -1.0})  # the last fn is the default only while its pred holds (tests/ops/test_case.py)


def test_cond_with_variables_assigns_only_in_the_taken_branch(tf1):
    def build(tf):
        v = tf.Variable(1.0, name="v")
        p = tf.placeholder(tf.bool, [], name="p")
        r = tf.cond(p, lambda: tf.assign_add(v, 10.0), lambda: tf.assign(v, -1.0))
        return r, v, p

    for pv in (True, False):
        for mod in (tf1, fl):
            g = mod.Graph()
            with g.as_default():
                r, v, p = build(mod)
                with mod.Session() as s:
                    s.run(mod.global_variables_initializer())
                    got = s.run(r, {p: pv})
                    after = s.run(v)
            expected = 11.0 if pv else -1.0
            assert got == expected and after == expected, (mod.__name__, pv, got, after)


def test_cond_branch_op_results_are_grouped(tf1):
    def build(tf):
        v = tf.Variable(0, name="v")
        p = tf.placeholder(tf.bool, [], name="p")
        op = tf.cond(p, lambda: tf.assign(v, 1).op, lambda: tf.assign(v, 2).op)
        return op, v, p

    for mod in (tf1, fl):
        g = mod.Graph()
        with g.as_default():
            op, v, p = build(mod)
            assert op.dtype == mod.bool
            with mod.Session() as s:
                s.run(mod.global_variables_initializer())
                s.run(op, {p: False})
                assert s.run(v) == 2


def test_constant_in_branch_depends_on_pivot():
    x = fl.placeholder(fl.float32, [])
    fl.cond(x > 0, lambda: x, lambda: fl.constant(1.0))
    g = fl.get_default_graph()
    const = g.get_operation_by_name("cond/Const")
    assert [c.name for c in const.control_inputs] == ["cond/switch_f"]


def test_cond_graph_layout_matches_tensorflow_v1(tf1):
    def layout(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, name="x")
            y = tf.constant(2.0, name="y")
            tf.cond(x > 0, lambda: x * y, lambda: tf.constant(1.0))
            return [(op.name, op.type, [t.name for t in op.inputs],
                     sorted(c.name for c in op.control_inputs)) for op in g.get_operations()]

    # disable_v2_behavior() (tests/conftest.py) also selects v1 control flow.
    assert sorted(layout(fl)) == sorted(layout(tf1))


def test_fetching_a_dead_branch_tensor_is_an_error():
    x = fl.placeholder(fl.float32, [])
    inside = []

    def true_fn():
        inside.append(x * 3.0)
        return inside[0]

    fl.cond(x > 0, true_fn, lambda: x)
    with pytest.raises(fl.errors.InvalidArgumentError, match="dead"):
        _run(inside[0], {x: -1.0})


# --- errors ------------------------------------------------------------------------
def test_cond_errors():
    x = fl.placeholder(fl.float32, [])
    with pytest.raises(TypeError, match="must not be a Python bool"):
        fl.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="'true_fn' must be callable"):
        fl.cond(x > 0, 3, lambda: x)
    with pytest.raises(TypeError, match="'false_fn' argument required"):
        fl.cond(x > 0, lambda: x)
    with pytest.raises(ValueError, match="'true_fn' must have a return value"):
        fl.cond(x > 0, lambda: None, lambda: x)
    with pytest.raises(ValueError, match="same type.*float32 from 'true_fn' and int32"):
        fl.cond(x > 0, lambda: x, lambda: fl.constant(1))
    with pytest.raises(ValueError, match="same nested structure"):
        fl.cond(x > 0, lambda: (x, x), lambda: x)
    with pytest.raises(ValueError, match="rank 0"):
        fl.cond(fl.constant([True]), lambda: x, lambda: x)


def test_cond_errors_match_tensorflow_classes(tf1):
    for bad in (
        lambda tf, x: tf.cond(x > 0, lambda: x, lambda: tf.constant(1)),
        lambda tf, x: tf.cond(x > 0, lambda: (x, x), lambda: x),
        lambda tf, x: tf.cond(True, lambda: x, lambda: x),
    ):
        classes = []
        for mod in (tf1, fl):
            with mod.Graph().as_default():
                x = mod.placeholder(mod.float32, [])
                with pytest.raises(Exception) as info:
                    bad(mod, x)
                classes.append(type(info.value).__name__)
        assert classes[0] == classes[1]


# --- gradients ---------------------------------------------------------------------
def test_cond_gradients_against_tensorflow(tf1):
    def build(tf, v):
        x = tf.placeholder(tf.float32, [], name="x")
        w = tf.placeholder(tf.float32, [3], name="w")
        y = tf.cond(x > 0, lambda: x * x * tf.reduce_sum(w), lambda: tf.sin(x) + w[0])
        z = tf.cond(x < 1, lambda: x, lambda: w * 2.0)  # outside value as a result
        gs = tf.gradients([y, tf.reduce_sum(z)], [x, w])
        return [y, z] + gs, {x: v, w: np.array([1.0, 2.0, -0.5], np.float32)}

    for v in (0.5, 2.0, -1.5):
        assert_same(tf1, lambda tf, v=v: build(tf, v), rtol=1e-5)


def test_nested_cond_gradient_is_exact():
    x = fl.placeholder(fl.float64, [])
    y = fl.cond(x > 0, lambda: fl.cond(x > 2, lambda: x ** 3, lambda: 2.0 * x), lambda: -x * x)
    (g,) = fl.gradients(y, [x])
    for v, want in ((3.0, 27.0), (1.0, 2.0), (-2.0, 4.0)):
        assert _run(g, {x: v}) == want


def test_gradient_through_case():
    x = fl.placeholder(fl.float64, [])
    y = fl.case([(x > 5, lambda: x * x), (x > 0, lambda: 3.0 * x)], default=lambda: fl.exp(x))
    (g,) = fl.gradients(y, x)
    assert _run(g, {x: 6.0}) == 12.0
    assert _run(g, {x: 1.0}) == 3.0
    np.testing.assert_allclose(_run(g, {x: -1.0}), np.exp(-1.0))


@grad_case("Switch", RS.randn(3))
def _(tf, a):
    return tf.cond(tf.reduce_sum(a) > -100.0, lambda: a * a, lambda: a * 2.0)


@grad_case("Switch", RS.randn(2, 2))
def _(tf, a):
    return tf.cond(tf.reduce_sum(a) < -100.0, lambda: a * a, lambda: tf.sin(a))


@grad_case("Merge", RS.randn(3), RS.randn(3))
def _(tf, a, b):
    return tf.cond(tf.reduce_sum(a) > -100.0, lambda: a * b, lambda: a)


def test_cond_accepts_deprecated_fn1_fn2():
    x = fl.placeholder(fl.float32, [])
    r = fl.cond(x > 0, fn1=lambda: x, fn2=lambda: -x)
    assert _run(r, {x: -2.0}) == 2.0
    with pytest.raises(TypeError, match="may not be set simultaneously"):
        fl.cond(x > 0, lambda: x, lambda: x, fn1=lambda: x)
