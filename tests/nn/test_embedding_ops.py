"""`tf.nn.embedding_lookup` against TensorFlow: one table and sharded tables ("mod" and
"div"), ids of any rank, max_norm, names, the IndexedSlices gradient and sparse
optimizer updates of only the looked-up rows."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

TABLE = np.arange(30, dtype=np.float32).reshape(10, 3) / 10.0


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("shards", [1, 3])
def test_lookup_matches_tensorflow(tf1, strategy, shards):
    def build(tf):
        if shards == 1:
            params = tf.constant(TABLE)
        else:  # TensorFlow's layouts: mod puts id i in shard i % n, div keeps ranges
            rows = [list(range(s, 10, 3)) for s in range(3)] if strategy == "mod" else [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
            params = [tf.constant(TABLE[r]) for r in rows]
        ids = tf.constant([[0, 9, 4], [4, 5, 1]])
        a = tf.nn.embedding_lookup(params, ids, partition_strategy=strategy)
        b = tf.nn.embedding_lookup(params, [7], partition_strategy=strategy, max_norm=1.0)
        return [a, b, tf.shape(a)]

    out = assert_same(tf1, build)
    np.testing.assert_allclose(out[0], TABLE[[[0, 9, 4], [4, 5, 1]]])


def test_names_and_static_shape(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            v = mod.Variable(TABLE, name="emb")
            e = mod.nn.embedding_lookup(v, mod.placeholder(mod.int32, [None, 2]))
            assert (e.name, e.shape.as_list(), e.op.inputs[0].op.type) == ("embedding_lookup/Identity:0", [None, 2, 3],
                                                                           "GatherV2")
            assert e.op.inputs[0].name == "embedding_lookup:0"


def test_gradient_is_indexed_slices_and_sparse_update(tf1):
    def build(tf):
        v = tf.Variable(TABLE, name="emb")
        e = tf.nn.embedding_lookup(v, [[1, 3], [3, 8]])
        loss = tf.reduce_sum(e * e)
        g = tf.gradients(loss, v)[0]
        assert isinstance(g, tf.IndexedSlices)
        step = tf.train.MomentumOptimizer(0.1, 0.5).minimize(loss)
        with tf.control_dependencies([step]):
            after = tf.identity(v.read_value() if hasattr(v, "read_value") else v)
        return [g.values, g.indices, g.dense_shape, after]

    out = assert_same(tf1, build)
    untouched = [0, 2, 4, 5, 6, 7, 9]
    np.testing.assert_array_equal(out[3][untouched], TABLE[untouched])


def test_errors():
    with pytest.raises(ValueError, match="params must be specified"):
        fl.nn.embedding_lookup(None, [0])
    with pytest.raises(ValueError, match="Need at least one param"):
        fl.nn.embedding_lookup([], [0])
