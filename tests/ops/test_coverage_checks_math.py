"""assert_integer / assert_rank_at_least / assert_rank_in / assert_near /
assert_same_float_dtype / assert_proper_iterable / is_numeric_tensor,
is_non_decreasing / is_strictly_increasing, lbeta / reciprocal_no_nan / zero_fraction /
accumulate_n, is_tensor / get_static_value / make_tensor_proto / make_ndarray /
dimension_at_index and the version constants: differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(6)


def _both(tf1: Any) -> tuple[Any, Any]:
    """TensorFlow, then flowlab: for checks that raise while the graph is built."""
    return tf1, fl


def test_assert_integer(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([1, 2])
        with tf.control_dependencies([tf.assert_integer(x)]):
            return tf.identity(x), tf.constant(tf.assert_integer(x).type)

    assert_same(tf1, lambda tf: list(build(tf)))
    msgs = []
    for tf in _both(tf1):
        with tf.Graph().as_default(), pytest.raises(TypeError) as info:
            tf.assert_integer(tf.constant([1.0], name="f"), message="ints")
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


_RANK_ASSERTS = {"assert_rank_at_least": lambda tf: tf.assert_rank_at_least,
                 "assert_rank_in": lambda tf: tf.assert_rank_in}


@pytest.mark.parametrize("fn,arg,ok", [("assert_rank_at_least", 2, True), ("assert_rank_at_least", 3, False),
                                       ("assert_rank_in", (1, 2), True), ("assert_rank_in", (0, 3), False)])
def test_rank_asserts_static(tf1: Any, fn: str, arg: Any, ok: bool) -> None:
    msgs = []
    for tf in _both(tf1):
        with tf.Graph().as_default():
            x = tf.zeros([2, 3], name="x")
            if ok:
                op = _RANK_ASSERTS[fn](tf)(x, arg)
                msgs.append(op.name)
            else:
                with pytest.raises(ValueError) as info:
                    _RANK_ASSERTS[fn](tf)(x, arg, message="bad")
                msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("fn,arg", [("assert_rank_at_least", 2), ("assert_rank_in", (1, 2))])
def test_rank_asserts_dynamic(tf1: Any, fn: str, arg: Any) -> None:
    def ok(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, None)
        with tf.control_dependencies([_RANK_ASSERTS[fn](tf)(p, arg)]):
            return tf.identity(p), {p: np.ones([2, 2], np.float32)}

    assert_same(tf1, ok)

    def bad(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, None)
        with tf.control_dependencies([_RANK_ASSERTS[fn](tf)(p, arg)]):
            return tf.identity(p), {p: np.ones([], np.float32)}

    e, a = assert_same_error(tf1, bad)
    assert "must have rank" in a.message and "must have rank" in e.message


def test_assert_near(tf1: Any) -> None:
    x = RS.randn(3).astype(np.float32)

    def ok(tf: Any) -> Any:
        with tf.control_dependencies([tf.assert_near(x, x + 1e-7, atol=1e-5),
                                      tf.assert_near(tf.constant(x, tf.float64), x.astype(np.float64))]):
            return tf.constant(1)

    assert_same(tf1, ok)

    def bad(tf: Any) -> Any:
        with tf.control_dependencies([tf.assert_near(x, x + 1.0, rtol=0.1)]):
            return tf.constant(1)

    e, a = assert_same_error(tf1, bad)
    assert "x and y not equal to tolerance" in a.message and "x and y not equal to tolerance" in e.message


def _dtype_checks(tf: Any) -> list[Any]:
    with tf.Graph().as_default():
        a, b = tf.constant(1.0, tf.float64, name="a"), tf.constant(2.0, tf.float64, name="b")
        res = [tf.assert_same_float_dtype([a, b]).name, tf.assert_same_float_dtype().name,
               tf.assert_same_float_dtype(None, tf.float16).name]
        calls = (lambda: tf.assert_same_float_dtype([a, tf.constant(1.0, name="c")]),
                 lambda: tf.assert_same_float_dtype([tf.constant(1)]),
                 lambda: tf.assert_proper_iterable("abc"), lambda: tf.assert_proper_iterable(3))
        for call in calls:
            try:
                call()
            except (TypeError, ValueError) as e:
                res.append(f"{type(e).__name__}: {e}")
        tf.assert_proper_iterable([1, 2])
        return res + [tf.is_numeric_tensor(a), tf.is_numeric_tensor(tf.constant(True)),
                      tf.is_numeric_tensor(tf.constant("s")), tf.is_numeric_tensor(1.0)]


def test_assert_same_float_dtype_and_iterable(tf1: Any) -> None:
    assert _dtype_checks(tf1) == _dtype_checks(fl)


@pytest.mark.parametrize("values", [[1, 2, 2, 3], [1, 3, 2], [5], [], [[1.0, 2.0], [3.0, 4.0]], [0.5, 0.5]])
def test_monotonic(tf1: Any, values: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant(values, dtype=tf.float32 if not values or isinstance(np.ravel(values)[0], float)
                        else tf.int32)
        return [tf.is_non_decreasing(x), tf.is_strictly_increasing(x), tf.math.is_non_decreasing(x),
                tf.math.is_strictly_increasing(x)]

    assert_same(tf1, build)
    for tf in _both(tf1):
        with tf.Graph().as_default(), pytest.raises(TypeError, match="Expected x to be numeric"):
            tf.is_non_decreasing(tf.constant(["a"]))


def test_lbeta_reciprocal_zero_fraction_accumulate(tf1: Any) -> None:
    x = np.abs(RS.randn(3, 4)).astype(np.float32) + 0.1

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        lb = tf.lbeta(xt)
        r = tf.math.reciprocal_no_nan(tf.constant([2.0, 0.0, -4.0]))
        z = tf.constant([[0.0, 1.0], [0.0, 0.0]])
        acc = tf.accumulate_n([xt, xt * 2.0, tf.ones([3, 4])])
        return [lb, tf.math.lbeta(xt[0]), r, tf.nn.zero_fraction(z), tf.math.zero_fraction(tf.constant([1, 0, 2])),
                acc, tf.math.accumulate_n([xt]), tf.gradients(tf.reduce_sum(lb) + tf.reduce_sum(acc), xt)]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)
    for tf in _both(tf1):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="inputs must be a list"):
                tf.accumulate_n([tf.constant(1.0), tf.constant(1)])
            with pytest.raises(TypeError):
                tf.math.reciprocal_no_nan(tf.constant([1]))


def test_tensor_util(tf1: Any) -> None:
    out = []
    for tf in _both(tf1):
        with tf.Graph().as_default():
            c = tf.constant([[1, 2, 3]])
            p = tf.placeholder(tf.float32, [None, 3])
            v = tf.get_static_value(tf.shape(c))
            out.append([tf.is_tensor(c), tf.is_tensor(np.ones(2)), tf.is_tensor(3),
                        repr(v), repr(tf.get_static_value(c + 1)), tf.get_static_value(p), tf.get_static_value(7),
                        str(tf.dimension_at_index(p.shape, 0)), str(tf.dimension_at_index(p.shape, 1)),
                        str(tf.dimension_at_index(tf.TensorShape(None), 2))])
    assert out[0] == out[1]


@pytest.mark.parametrize("value,kw", [([1.0, 2.0], {}), (np.arange(6).reshape(2, 3), {}), (3, {"dtype": "int64"}),
                                      ("abc", {}), ([b"a", b"bc"], {}), (1.5, {"shape": [2, 2]}),
                                      ([True, False], {}), (np.float16(2), {}), ([1 + 2j], {})])
def test_make_tensor_proto(tf1: Any, value: Any, kw: dict) -> None:
    a = tf1.make_tensor_proto(value, **kw)
    b = fl.make_tensor_proto(value, **kw)
    assert a.SerializeToString() == b.SerializeToString()
    ea, eb = tf1.make_ndarray(a), fl.make_ndarray(b)
    assert ea.dtype == eb.dtype and ea.shape == eb.shape
    np.testing.assert_array_equal(ea, eb)


def test_versions(tf1: Any) -> None:
    assert_same(tf1, lambda tf: tf.constant([tf.VERSION, str(tf.GRAPH_DEF_VERSION),
                                             str(tf.GRAPH_DEF_VERSION_MIN_CONSUMER),
                                             str(tf.GRAPH_DEF_VERSION_MIN_PRODUCER)]))
