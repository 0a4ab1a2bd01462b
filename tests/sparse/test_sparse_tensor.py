"""SparseTensor and sparse_placeholder against TensorFlow: fetching (a
SparseTensorValue), feeding a SparseTensorValue or an (indices, values,
dense_shape) tuple, placeholders with no, partial and tensor shapes, static shapes
and set_shape, from_value, eval; and the `tf.sparse` / top-level names."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.sparse.helpers import IND, SHAPE, VAL, sp, sp_late


def _static(tf, build):
    with tf.Graph().as_default():
        return build(tf)


def test_fetch_gives_a_sparse_tensor_value(tf1):
    out = assert_same(tf1, lambda tf: [sp(tf), {"s": sp(tf)}, (sp(tf).indices, sp(tf))])
    assert type(out[0]).__name__ == "SparseTensorValue"
    assert out[0].indices.dtype == np.int64 and out[0].dense_shape.dtype == np.int64


@pytest.mark.parametrize("shape", [None, [4, 3], [None, 3], [-1, -1]])
def test_sparse_placeholder_feeds(tf1, shape):
    def build(tf):
        p = tf.sparse_placeholder(tf.float32, shape=shape, name="p")
        q = tf.sparse.placeholder(tf.int64)
        feed = {p: tf.SparseTensorValue(IND, VAL, SHAPE), q: (IND, np.arange(4), SHAPE)}
        return [p, tf.sparse.reduce_sum(p, 1), tf.sparse.to_dense(q)], feed
    assert_same(tf1, build)


def test_sparse_placeholder_default_shape(tf1):
    # with a shape, the dense shape need not be fed (its default is the given shape)
    assert_same(tf1, lambda tf: (lambda p: ([p.dense_shape, tf.sparse.to_dense(p)],
                                            {p.indices: IND, p.values: VAL}))(
        tf.sparse_placeholder(tf.float32, shape=[4, 3])))


def test_feeding_a_sparse_tensor_of_defaults(tf1):
    def build(tf):
        s = sp_late(tf)
        return tf.sparse.to_dense(s), {s: (np.array([[0, 0], [1, 1]], np.int64), VAL[:2] * 2, np.array([2, 2], np.int64))}
    assert_same(tf1, build)


def test_placeholder_static_shapes_and_names(tf1):
    def build(tf):
        a = tf.sparse_placeholder(tf.float32, name="a")
        b = tf.sparse_placeholder(tf.float32, shape=[None, 3], name="b")
        c = tf.sparse_placeholder(tf.float32, shape=tf.constant([2, 5], tf.int64), name="c")
        d = tf.sparse_placeholder(tf.float32, shape=[4, tf.Dimension(None)])
        return [str(x.shape) for x in (a, b, c, d)] + [
            a.indices.name, a.values.name, a.dense_shape.name, b.dense_shape.op.type, c.dense_shape.op.type,
            str(a.indices.shape), str(b.indices.shape), str(b.values.shape), str(b.dense_shape.shape),
            a.dense_shape.op.type, b.dtype.name]
    assert _static(fl, build) == _static(tf1, build)


def test_static_shape_and_set_shape(tf1):
    def build(tf):
        s = sp(tf)
        late = tf.SparseTensor(IND, VAL, tf.placeholder(tf.int64, [2]))
        before = str(late.shape)
        late.set_shape([None, 3])
        out = [str(s.shape), before, str(late.shape), str(s.get_shape()), s.dtype.name,
               str(tf.SparseTensor.from_value(tf.SparseTensorValue(IND, VAL, SHAPE)).shape)]
        with pytest.raises(ValueError):
            s.set_shape([5, 3])
        return out
    assert _static(fl, build) == _static(tf1, build)


def test_constructor_checks(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError):
                tf.SparseTensor([[0, 0]], [1.0, 2.0], [2, 2])
            with pytest.raises(ValueError):
                tf.SparseTensor([0, 1], [1.0, 2.0], [2, 2])


def test_eval_in_a_default_session(tf1):
    got = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), tf.Session():
            got.append(sp(tf).eval())
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


def test_sparse_namespace_has_tensorflows_v1_names(tf1):
    missing = {"SparseConditionalAccumulator", "bincount", "cross", "cross_hashed"}  # not built
    want = {n for n in dir(tf1.sparse) if not n.startswith("_")} - missing
    have = {n for n in dir(fl.sparse) if not n.startswith("_")}
    assert want <= have, sorted(want - have)


def test_top_level_sparse_names(tf1):
    want = {n for n in dir(tf1) if n.startswith("sparse_")} - {"sparse_matmul"}  # a dense op with hints
    have = {n for n in dir(fl) if n.startswith("sparse_")}
    assert want <= have, sorted(want - have)
    assert {"embedding_lookup_sparse", "safe_embedding_lookup_sparse"} <= set(dir(fl.nn))


@pytest.mark.parametrize("value,error", [(([[0, 0]], [1.0]), "InvalidArgumentError"), ("x", "ValueError")])
def test_feeding_something_else(tf1, value, error):
    # TensorFlow pairs the value's items with the three parts: a 2-tuple leaves the dense
    # shape unfed, a string feeds its characters.
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            p = tf.sparse_placeholder(tf.float32)
            with tf.Session() as sess, pytest.raises(Exception) as e:
                sess.run(p, {p: value})
            assert type(e.value).__name__ == error
