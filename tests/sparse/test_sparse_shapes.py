"""Static shapes of the sparse builders' results against TensorFlow's, with known and
unknown parts: what graph-building code (and `set_shape`-free model code) sees."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.sparse.helpers import IND, SHAPE, VAL

B = np.ones((3, 2), np.float32)


def _parts(x):
    if isinstance(x, (list, tuple)):
        return [p for y in x for p in _parts(y)]
    if hasattr(x, "indices") and hasattr(x, "dense_shape") and hasattr(x, "values"):
        return [x.shape, x.indices.shape, x.values.shape, x.dense_shape.shape]
    return [x.shape]


def _known(tf):
    return tf.SparseTensor(IND, VAL, SHAPE)


def _unknown(tf):
    return tf.sparse_placeholder(tf.float32)


def _partial(tf):
    return tf.sparse_placeholder(tf.float32, [None, 3])


BUILDS = {
    "matmul": lambda tf, s: tf.sparse_tensor_dense_matmul(s, B),
    "matmul_adj": lambda tf, s: tf.sparse_tensor_dense_matmul(s, np.ones((4, 2), np.float32), adjoint_a=True),
    "reduce_sum": lambda tf, s: tf.sparse.reduce_sum(s, 1),
    "reduce_sum_all": lambda tf, s: tf.sparse.reduce_sum(s),
    "reduce_max_keep": lambda tf, s: tf.sparse.reduce_max(s, 0, keepdims=True),
    "reduce_sum_sparse": lambda tf, s: tf.sparse.reduce_sum_sparse(s, 1),
    "reorder": lambda tf, s: tf.sparse.reorder(s),
    "reshape": lambda tf, s: tf.sparse.reshape(s, [-1, 2]),
    "concat": lambda tf, s: tf.sparse.concat(0, [s, s]),
    "slice": lambda tf, s: tf.sparse.slice(s, [0, 0], [2, 2]),
    "split": lambda tf, s: tf.sparse.split(sp_input=s, num_split=2, axis=0),
    "fill": lambda tf, s: tf.sparse.fill_empty_rows(s, 0.0),
    "transpose": lambda tf, s: tf.sparse.transpose(s),
    "add": lambda tf, s: tf.sparse.add(s, s),
    "softmax": lambda tf, s: tf.sparse.softmax(s),
    "maximum": lambda tf, s: tf.sparse.maximum(s, s),
    "mul": lambda tf, s: s * np.float32(2),
    "to_dense": lambda tf, s: tf.sparse.to_dense(s),
    "retain": lambda tf, s: tf.sparse.retain(s, tf.ones_like(s.values, tf.bool)),
    "expand_dims": lambda tf, s: tf.sparse.expand_dims(s, 0),
}


@pytest.mark.parametrize("operand", [_known, _partial])
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_static_shapes(tf1, name, operand):
    got = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            got.append([str(s.as_list()) if s.ndims is not None else "unknown"
                        for s in _parts(BUILDS[name](tf, operand(tf)))])
    assert got[1] == got[0]


@pytest.mark.parametrize("name", ["matmul", "reduce_sum", "reorder", "concat", "slice", "split", "fill",
                                  "add", "softmax", "maximum", "mul", "to_dense"])
def test_static_shapes_unknown_rank(tf1, name):
    got = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            got.append([str(s.as_list()) if s.ndims is not None else "unknown"
                        for s in _parts(BUILDS[name](tf, _unknown(tf)))])
    assert got[1] == got[0]
