"""A TensorFlow graph of sparse ops (and their gradients) imports into flowlab and
computes the same: the op types, input and attr names and dtypes are TensorFlow's.
And the other way: flowlab's sparse graph builds TensorFlow's op types."""

from __future__ import annotations

import numpy as np

import flowlab as fl
from tests.sparse.helpers import IND, SHAPE, VAL

B = np.arange(6, dtype=np.float32).reshape(3, 2) - 1.0


def _build(tf):
    ind = tf.placeholder(tf.int64, [None, 2], name="ind")
    val = tf.placeholder(tf.float32, [None], name="val")
    shape = tf.placeholder(tf.int64, [2], name="shape")
    b = tf.constant(B)
    sp = tf.SparseTensor(ind, val, shape)
    ordered = tf.sparse.reorder(sp)
    filled, empty = tf.sparse.fill_empty_rows(ordered, -1.0)
    cat = tf.sparse.concat(1, [ordered, tf.sparse.slice(ordered, [0, 1], [4, 2])])
    parts = tf.sparse.split(sp_input=cat, num_split=2, axis=1)
    soft = tf.sparse.softmax(ordered)
    mm = tf.sparse_tensor_dense_matmul(ordered, b, name="mm")
    total = tf.sparse.add(ordered, soft)
    biggest = tf.stop_gradient(tf.sparse.to_dense(tf.sparse.maximum(ordered, soft)))
    outs = [mm, tf.sparse.reduce_sum(total, 1), tf.stop_gradient(tf.sparse.reduce_max(filled, 0)), tf.cast(empty, tf.float32),
            tf.stop_gradient(tf.sparse.to_dense(parts[1])), tf.sparse.to_dense(tf.sparse.reshape(cat, [-1, 2])),
            (ordered * tf.constant([1.0, 2.0, 3.0])).values, tf.sparse.segment_mean(b, [0, 2, 2], [0, 0, 1]), biggest]
    loss = tf.add_n([tf.reduce_sum(o * o) for o in outs])
    grads = tf.gradients(loss, [val, b])  # stopped: TF has no gradient for SparseReduceMax, SparseSplit, SparseSparseMaximum
    return [tf.identity(o, name=f"out{i}") for i, o in enumerate(outs + grads)]


def test_a_tensorflow_sparse_graph_imports_and_runs_the_same(tf1):
    feed = {"ind:0": IND[::-1].copy(), "val:0": VAL[::-1].copy(), "shape:0": SHAPE}
    with tf1.Graph().as_default() as g:
        outs = _build(tf1)
        data = g.as_graph_def().SerializeToString()
        with tf1.Session() as sess:
            want = sess.run([o.name for o in outs], feed)
    pb = fl.GraphDef()
    pb.ParseFromString(data)
    with fl.Graph().as_default():
        fl.import_graph_def(pb, name="")
        with fl.Session() as sess:
            got = sess.run([o.name for o in outs], feed)
    for w, h in zip(want, got):
        assert np.asarray(w).dtype == np.asarray(h).dtype
        np.testing.assert_allclose(h, w, rtol=1e-6, atol=1e-6)


def test_the_op_types_are_tensorflows(tf1):
    types = []
    for tf in (tf1, fl):
        with tf.Graph().as_default() as g:
            _build(tf)
            types.append({op.type for op in g.get_operations() if op.type.startswith("Sparse")})
    assert types[1] == types[0], (sorted(types[0] ^ types[1]))
