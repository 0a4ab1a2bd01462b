"""`tf.nn.embedding_lookup_sparse` and `tf.nn.safe_embedding_lookup_sparse` against
TensorFlow: every combiner with and without weights, a sharded table, max_norm,
int32 ids, 3-D ids, invalid ids and weights, empty rows with and without default_id;
their gradients with respect to the table (IndexedSlices on the fast path) and the
weights, and a training step on a variable."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

TABLE = (np.arange(20, dtype=np.float32).reshape(5, 4) / 7.0 - 1.0)
IDS_IND = np.array([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]], np.int64)
IDS = np.array([1, 4, 0, 2, 2, 3], np.int64)
WTS = np.array([0.5, 2.0, 1.0, 1.5, -0.5, 3.0], np.float32)
SHAPE = np.array([4, 3], np.int64)


def _ids(tf, ids=IDS):
    return tf.SparseTensor(IDS_IND, ids, SHAPE)


def _wts(tf, w=WTS):
    return tf.SparseTensor(IDS_IND, w, SHAPE)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn", None])
def test_embedding_lookup_sparse(tf1, combiner):
    assert_same(tf1, lambda tf: [
        tf.nn.embedding_lookup_sparse(TABLE, _ids(tf), None, combiner=combiner),
        tf.nn.embedding_lookup_sparse(TABLE, _ids(tf), _wts(tf), combiner=combiner),
        tf.nn.embedding_lookup_sparse(TABLE, _ids(tf, IDS.astype(np.int32)), None, combiner=combiner),
        tf.nn.embedding_lookup_sparse([TABLE[:3], TABLE[3:]], _ids(tf), _wts(tf), combiner=combiner,
                                      partition_strategy="div"),
        tf.nn.embedding_lookup_sparse(TABLE, _ids(tf), None, combiner=combiner, max_norm=1.0),
        tf.nn.embedding_lookup_sparse(TABLE.astype(np.float64), _ids(tf), _wts(tf), combiner=combiner),
    ], rtol=2e-6)


def test_embedding_lookup_sparse_argument_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="combiner must be one of 'mean', 'sqrtn' or 'sum', got max"):
                tf.nn.embedding_lookup_sparse(TABLE, _ids(tf), None, combiner="max")
            with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
                tf.nn.embedding_lookup_sparse(TABLE, tf.constant([1]), None)
            with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
                tf.nn.embedding_lookup_sparse(TABLE, _ids(tf), tf.constant([1.0]))


SAFE_IDS = np.array([1, -1, 0, 2, 4, 3], np.int64)
SAFE_WTS = np.array([0.5, 2.0, -1.0, 1.5, 0.0, 3.0], np.float32)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("default_id", [None, 3])
def test_safe_embedding_lookup_sparse(tf1, combiner, default_id):
    ind3 = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1], [2, 0, 0]], np.int64)
    assert_same(tf1, lambda tf: [
        tf.nn.safe_embedding_lookup_sparse(TABLE, _ids(tf, SAFE_IDS), None, combiner=combiner,
                                           default_id=default_id),
        tf.nn.safe_embedding_lookup_sparse(TABLE, _ids(tf, SAFE_IDS), _wts(tf, SAFE_WTS), combiner=combiner,
                                           default_id=default_id),
        tf.nn.safe_embedding_lookup_sparse([TABLE[:3], TABLE[3:]], tf.SparseTensor(ind3, SAFE_IDS, [3, 2, 2]),
                                           tf.SparseTensor(ind3, SAFE_WTS, [3, 2, 2]), combiner=combiner,
                                           default_id=default_id),
    ], rtol=2e-6)


def test_safe_lookup_static_shape(tf1):
    def build(tf):
        ind3 = np.array([[0, 0, 0], [1, 1, 1]], np.int64)
        out = tf.nn.safe_embedding_lookup_sparse(TABLE, tf.SparseTensor(ind3, np.array([1, 2], np.int64), [3, 2, 2]))
        return out.shape.as_list()
    with tf1.Graph().as_default():
        want = build(tf1)
    with fl.Graph().as_default():
        assert build(fl) == want


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_gradients(tf1, combiner):
    def build(tf):
        table = tf.constant(TABLE)
        w = tf.constant(WTS)
        fast = tf.nn.embedding_lookup_sparse(table, _ids(tf), None, combiner=combiner)
        weighted = tf.nn.embedding_lookup_sparse(table, _ids(tf), tf.SparseTensor(IDS_IND, w, SHAPE),
                                                 combiner=combiner)
        g_fast = tf.gradients(tf.reduce_sum(fast * fast), table)[0]
        g_table, g_w = tf.gradients(tf.reduce_sum(weighted * weighted), [table, w])
        safe = tf.nn.safe_embedding_lookup_sparse(table, _ids(tf, SAFE_IDS), combiner=combiner)
        g_safe = tf.gradients(tf.reduce_sum(safe * safe), table)[0]
        return [g_fast.values, g_fast.indices, g_fast.dense_shape, tf.convert_to_tensor(g_table), g_w,
                tf.convert_to_tensor(g_safe)]
    assert_same(tf1, build, rtol=2e-6)


def test_training_step_on_a_variable(tf1):
    def build(tf):
        tf.set_random_seed(0)
        table = tf.Variable(TABLE, name="table")
        out = tf.nn.embedding_lookup_sparse(table, _ids(tf), None, combiner="mean")
        loss = tf.reduce_sum(tf.square(out - 1.0))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.control_dependencies([step]):
            return tf.identity(loss), table.read_value() if hasattr(table, "read_value") else table
    g1, g2 = [], []
    for tf, acc in ((tf1, g1), (fl, g2)):
        with tf.Graph().as_default():
            loss, table = build(tf)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    acc.append(s.run(loss))
                acc.append(s.run(table))
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(b, a, rtol=2e-6)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_partitioned_variable_table(tf1, strategy):
    def build(tf):
        with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(2)):
            table = tf.get_variable("table", initializer=tf.constant(TABLE))
        out = tf.nn.embedding_lookup_sparse(table, _ids(tf), _wts(tf), combiner="sqrtn",
                                            partition_strategy=strategy)
        safe = tf.nn.safe_embedding_lookup_sparse(table, _ids(tf, SAFE_IDS), partition_strategy=strategy)
        g = tf.gradients(tf.reduce_sum(out * out) + tf.reduce_sum(safe), list(table))
        return [out, safe] + [tf.convert_to_tensor(x) for x in g]
    assert_same(tf1, build, rtol=2e-6)
