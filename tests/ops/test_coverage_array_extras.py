"""unique_with_counts, setdiff1d, unravel_index, ensure_shape, bitcast, identity_n,
broadcast_dynamic_shape / broadcast_static_shape, batch_gather, repeat, segment_prod
(also tf.math): values, dtypes, gradients and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(8)


def test_unique_with_counts_and_setdiff(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([4, 1, 4, 2, 1, 1, 9])
        return [tf.unique_with_counts(x), tf.unique_with_counts(x, out_idx=tf.int64),
                tf.unique_with_counts(tf.constant(["a", "b", "a"])), tf.setdiff1d(x, [1, 9]),
                tf.setdiff1d([1.5, 2.5], [2.5], index_dtype=tf.int64)]

    assert_same(tf1, build)


def test_unique_with_counts_error(tf1: Any) -> None:
    assert_same_error(tf1, lambda tf: tf.unique_with_counts(tf.placeholder_with_default([[1]], None)))


def test_unravel_index(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [tf.unravel_index([5, 7, 0], [3, 4]), tf.unravel_index(3, [3, 4]),
                tf.unravel_index(tf.constant([11, 2], tf.int64), tf.constant([2, 3, 2], tf.int64)),
                tf.unravel_index([-1], [3, 4])]

    assert_same(tf1, build)


@pytest.mark.parametrize("build,msg", [
    (lambda tf: tf.unravel_index([5, 22], [3, 4]), "index is out of bound as with dims"),
    (lambda tf: tf.unravel_index([1], [0, 4]), "Input dims cannot contain a dim of zero, but dims contains zero at index 0")])
def test_unravel_index_errors(tf1: Any, build: Any, msg: str) -> None:
    e, a = assert_same_error(tf1, build)
    assert msg in e.message and msg in a.message


def test_ensure_shape(tf1: Any) -> None:
    x = RS.randn(2, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [None, None])
        y = tf.ensure_shape(p, [2, None])
        return [y, tf.constant(str(y.shape)), tf.gradients(tf.reduce_sum(y * y), p)], {p: x}

    assert_same(tf1, build)


def test_ensure_shape_errors(tf1: Any) -> None:
    e, a = assert_same_error(tf1, lambda tf: tf.ensure_shape(tf.placeholder_with_default([1, 2, 3], [None]), [2]))
    assert "Shape of tensor PlaceholderWithDefault [3] is not compatible with expected shape [2]." in e.message
    assert "Shape of tensor PlaceholderWithDefault [3] is not compatible with expected shape [2]." in a.message
    for mod in (tf1, fl):
        with mod.Graph().as_default(), pytest.raises(ValueError):
            mod.ensure_shape(mod.constant([1, 2, 3]), [2])


def test_bitcast(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        f = tf.constant([1.0, -2.5, 3e9])
        return [tf.bitcast(f, tf.int32), tf.bitcast(f, tf.uint8), tf.bitcast(tf.constant(1.0), tf.int32),
                tf.bitcast(tf.constant([[1, 2, 3, 4], [0, 0, 128, 63]], tf.uint8), tf.float32),
                tf.bitcast(tf.constant([1, 2], tf.int64), tf.float64), tf.bitcast(f, tf.float32),
                tf.bitcast(tf.constant([1 + 2j], tf.complex64), tf.float64)]

    assert_same(tf1, build)
    for mod in (tf1, fl):
        with mod.Graph().as_default(), pytest.raises(ValueError, match="Cannot bitcast from 4 to 1 due to shape|"
                                                     "Cannot bitcast from 1 to 4 due to shape. 3 does not match 4"):
            mod.bitcast(mod.constant([1, 2, 3], mod.uint8), mod.float32)


def test_identity_n(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        a, b = tf.constant([1.0, 2.0]), tf.constant(3)
        c, d = tf.identity_n([a, b])
        return [c, d, tf.gradients(tf.reduce_sum(c * c), a), tf.constant(c.op.type)]

    assert_same(tf1, build)


def test_broadcast_shapes(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder_with_default(tf.constant([5, 1, 3]), [None])
        s = tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]), tf.TensorShape([4, 1]))
        return [tf.broadcast_dynamic_shape([1, 3], [2, 1]), tf.broadcast_dynamic_shape(p, [4, 1]),
                tf.broadcast_dynamic_shape(tf.constant([2], tf.int64), tf.constant([], tf.int64)),
                tf.constant(str(s)), tf.constant(str(tf.broadcast_static_shape(tf.TensorShape(None),
                                                                               tf.TensorShape([2]))))]

    assert_same(tf1, build)
    e, a = assert_same_error(tf1, lambda tf: tf.broadcast_dynamic_shape(
        tf.placeholder_with_default([2, 3], [None]), [4]))
    assert "Incompatible shapes: [2,3] vs. [4]" in e.message and "Incompatible shapes: [2,3] vs. [4]" in a.message
    msgs = []
    for mod in (tf1, fl):
        with mod.Graph().as_default(), pytest.raises(ValueError) as info:
            mod.broadcast_static_shape(mod.TensorShape([2, 3]), mod.TensorShape([4]))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_batch_gather(tf1: Any) -> None:
    p = RS.randn(2, 3, 4).astype(np.float32)

    def build(tf: Any) -> Any:
        params = tf.constant(p)
        r1 = tf.batch_gather(params, [[2, 0], [1, 1]])
        r2 = tf.batch_gather(params, [[[3], [0], [1]], [[2], [2], [0]]])
        r3 = tf.batch_gather(params, tf.constant([1, 0], tf.int64))
        return [r1, r2, r3, tf.gradients(tf.reduce_sum(r1 * r1) + tf.reduce_sum(r2), params),
                tf.constant(str(r2.shape))]

    assert_same(tf1, build)
    e, a = assert_same_error(tf1, lambda tf: tf.batch_gather(tf.constant([[1, 2], [3, 4]]), [[1], [5]]))
    assert "indices[1] = 7 is not in [0, 4)" in e.message and "indices[1] = 7 is not in [0, 4)" in a.message


def test_repeat(tf1: Any) -> None:
    x = RS.randn(2, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        outs = [tf.repeat(xt, 2), tf.repeat(xt, [2, 0, 1], axis=1), tf.repeat(xt, [3, 1], axis=0),
                tf.repeat(xt, 2, axis=-1), tf.repeat([1, 2], tf.constant([1, 3]))]
        return outs + [tf.gradients(tf.reduce_sum(outs[1] * outs[1]) + tf.reduce_sum(outs[0]), xt)]

    assert_same(tf1, build)


def test_segment_prod(tf1: Any) -> None:
    d = np.array([[1.0, 2.0], [0.0, 3.0], [2.0, 5.0], [4.0, 0.0], [0.0, 0.0]], np.float32)

    def build(tf: Any) -> Any:
        data = tf.constant(d)
        ids = tf.constant([0, 0, 1, 1, 3])
        y = tf.segment_prod(data, ids)
        w = tf.constant(RS.randn(4, 2).astype(np.float32))
        return [y, tf.math.segment_prod(tf.constant([2, 3, 4]), [0, 0, 2]),
                tf.gradients(tf.reduce_sum(y * w), data)]

    RS.seed(1)
    st = RS.get_state()
    assert_same(tf1, lambda tf: (RS.set_state(st), build(tf))[1])
    assert_same_error(tf1, lambda tf: tf.segment_prod(tf.constant([1.0, 2.0]),
                                                      tf.placeholder_with_default([1, 0], [None])))
