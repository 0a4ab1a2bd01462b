"""A TF1-style wide-and-deep program on sparse features, trained a few steps under
TensorFlow and flowlab: the same losses and weights.  Sparse ids come in through a
sparse_placeholder each step (a SparseTensorValue feed), the wide part is a
sparse-dense matmul, the deep part a weighted embedding_lookup_sparse and a
safe_embedding_lookup_sparse, trained by Adagrad (IndexedSlices updates) and SGD."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl

ROWS, VOCAB, DIM = 6, 11, 4


def _batch(step):
    rs = np.random.RandomState(step)
    every_row = np.stack([np.arange(ROWS), np.zeros(ROWS, int)], 1)  # each row keeps a valid id
    ind = np.unique(np.concatenate([every_row, np.stack([rs.randint(0, ROWS, 14), rs.randint(1, 5, 14)], 1)]),
                    axis=0).astype(np.int64)
    ids = np.where(ind[:, 1] == 0, rs.randint(0, VOCAB, len(ind)), rs.randint(-1, VOCAB, len(ind))).astype(np.int64)
    wts = rs.uniform(0.1, 2.0, len(ind)).astype(np.float32)
    labels = rs.randint(0, 2, (ROWS, 1)).astype(np.float32)
    return ind, ids, wts, labels


def _train(tf, optimizer, steps=4):
    with tf.Graph().as_default():
        sp_ids = tf.sparse_placeholder(tf.int64, name="ids")
        sp_w = tf.sparse_placeholder(tf.float32, name="w")
        labels = tf.placeholder(tf.float32, [None, 1])
        wide_w = tf.Variable(np.linspace(-0.1, 0.1, VOCAB, dtype=np.float32).reshape(VOCAB, 1), name="wide")
        emb = tf.Variable(np.linspace(-1, 1, VOCAB * DIM, dtype=np.float32).reshape(VOCAB, DIM), name="emb")
        valid = tf.sparse.retain(sp_ids, sp_ids.values >= 0)
        one_hot = tf.SparseTensor(tf.stack([valid.indices[:, 0], valid.values], 1),
                                  tf.ones_like(valid.values, tf.float32), [ROWS, VOCAB])
        wide = tf.sparse_tensor_dense_matmul(tf.sparse.reorder(one_hot), wide_w)
        weights = tf.sparse.retain(sp_w, sp_ids.values >= 0)
        deep = tf.nn.embedding_lookup_sparse(emb, valid, weights, combiner="sqrtn")
        safe = tf.nn.safe_embedding_lookup_sparse(emb, sp_ids, sp_w, combiner="mean")
        logits = wide + tf.reduce_sum(deep * safe, 1, keepdims=True)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
        train = optimizer(tf).minimize(loss)
        out = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(steps):
                ind, ids, wts, lab = _batch(step)
                feed = {sp_ids: tf.SparseTensorValue(ind, ids, [ROWS, 5]), sp_w: (ind, wts, [ROWS, 5]), labels: lab}
                out.append(sess.run([loss, train], feed)[0])
            out += sess.run([wide_w, emb])
        return out


@pytest.mark.parametrize("optimizer", [lambda tf: tf.train.AdagradOptimizer(0.3),
                                       lambda tf: tf.train.GradientDescentOptimizer(0.5)],
                         ids=["adagrad", "sgd"])
def test_wide_and_deep_trains_the_same(tf1, optimizer):
    want, got = _train(tf1, optimizer), _train(fl, optimizer)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
