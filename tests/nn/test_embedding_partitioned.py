"""`tf.nn.embedding_lookup` on a PartitionedVariable (and on lists of Variable shards)
against TensorFlow: values, names and colocation of the per-shard Gathers, the
IndexedSlices gradient of each shard, training step by step with every optimizer's
sparse path, and training a partitioned table equal to training the whole one."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

TABLE = (np.arange(44, dtype=np.float32).reshape(11, 4) - 20.0) / 10.0
IDS = np.array([[0, 10, 4], [4, 5, 1], [7, 7, 2]], np.int32)


def _table(tf, shards, name="emb", dtype="float32"):
    return tf.get_variable(name, [11, 4], dtype=getattr(tf, dtype), initializer=TABLE.astype(dtype),
                           partitioner=tf.fixed_size_partitioner(shards))


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("shards", [1, 2, 3, 5])
def test_lookup_of_a_partitioned_variable_matches_tensorflow(tf1, strategy, shards):
    def build(tf):
        pv = _table(tf, shards)
        ids = tf.placeholder(tf.int32, [None, 3])
        a = tf.nn.embedding_lookup(pv, ids, partition_strategy=strategy)
        b = tf.nn.embedding_lookup(pv, [3, 9, 0], partition_strategy=strategy, max_norm=0.5)
        c = tf.nn.embedding_lookup(list(pv), tf.constant([[2]], tf.int64), partition_strategy=strategy)
        return [a, b, c, tf.shape(a)], {ids: IDS}

    out = assert_same(tf1, build)
    if strategy == "div":  # "div" on TensorFlow's shards is the whole table's rows
        np.testing.assert_allclose(out[0], TABLE[IDS])


def test_graph_names_shapes_and_colocation_match_tensorflow(tf1):
    got = {}
    for tf in (tf1, fl):
        with tf.Graph().as_default() as g:
            with tf.device("/cpu:0"):
                pv = _table(tf, 3)
            with tf.device("/cpu:1"):
                e = tf.nn.embedding_lookup(pv, tf.placeholder(tf.int32, [None, 2]), partition_strategy="div")
            gathers = [op for op in g.get_operations() if op.type == "GatherV2"]
            got[tf.__name__] = (
                e.name, e.shape.as_list(),
                # (the stitch is DynamicStitch in flowlab: same values; ops in another order
                # inside array_ops.concat)
                sorted((op.name, op.type.replace("ParallelDynamicStitch", "DynamicStitch"))
                       for op in g.get_operations() if op.name.startswith("embedding_lookup")),
                [(op.name, op.colocation_groups(), op.inputs[0].name) for op in gathers],
            )
    want, mine = got.values()
    assert mine == want
    assert [c for _, c, _ in mine[3]] == [[b"loc:@emb/part_0"], [b"loc:@emb/part_1"], [b"loc:@emb/part_2"]]


def test_only_gathered_rows_cross_devices():
    with fl.Graph().as_default() as g:
        def shard_device(op):  # emb/part_i (and its initializer) on cpu:i
            m = re.match(r"emb/part_(\d)", op.name)
            return f"/cpu:{m.group(1)}" if m else "/cpu:3"

        with fl.device(shard_device):
            pv = _table(fl, 3)
        with fl.device("/cpu:3"):
            ids = fl.placeholder(fl.int32, [None, 3])
            e = fl.nn.embedding_lookup(pv, ids, partition_strategy="div")
        gathers = [op for op in g.get_operations() if op.type == "GatherV2"]
        with fl.Session(config=fl.ConfigProto(device_count={"CPU": 4})) as s:
            s.run(fl.global_variables_initializer())
            np.testing.assert_allclose(s.run(e, {ids: IDS}), TABLE[IDS])
            pairs = s.partitions(e, {ids: None}).pairs
    # The lookup's device scope (cpu:3) is dropped for the Gathers: each goes where its
    # shard is, so a shard never leaves its device, only the gathered rows do.
    assert [op.device for op in gathers] == ["/cpu:0", "/cpu:1", "/cpu:2"]
    crossing = sorted({p.tensor for p in pairs})
    assert not [t for t in crossing if "/part_" in t], crossing
    assert {t for t in crossing if "GatherV2" in t} == {op.outputs[0].name for op in gathers}


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_gradient_is_one_indexed_slices_per_shard(tf1, strategy):
    def build(tf):
        pv = _table(tf, 3)
        e = tf.nn.embedding_lookup(pv, IDS, partition_strategy=strategy)
        loss = tf.reduce_sum(e * e * tf.constant([1.0, 2.0, 3.0, 4.0]))
        grads = tf.gradients(loss, list(pv))
        assert all(isinstance(g, tf.IndexedSlices) for g in grads)
        return [[g.values, g.indices, g.dense_shape] for g in grads]

    assert_same(tf1, build)


OPTIMIZERS = {
    "sgd": lambda tf: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda tf: tf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adagrad": lambda tf: tf.train.AdagradOptimizer(0.3),
    "adam": lambda tf: tf.train.AdamOptimizer(0.05),
    "rmsprop": lambda tf: tf.train.RMSPropOptimizer(0.01, momentum=0.5),
    "rmsprop_centered": lambda tf: tf.train.RMSPropOptimizer(0.01, centered=True),
    "ftrl": lambda tf: tf.train.FtrlOptimizer(0.2, l1_regularization_strength=0.01,
                                              l2_regularization_strength=0.02),
    "ftrl_shrinkage": lambda tf: tf.train.FtrlOptimizer(
        0.2, l2_shrinkage_regularization_strength=0.05),
    "adadelta": lambda tf: tf.train.AdadeltaOptimizer(1.0),
    "proximal_adagrad": lambda tf: tf.train.ProximalAdagradOptimizer(
        0.3, l1_regularization_strength=0.01, l2_regularization_strength=0.01),
    "proximal_sgd": lambda tf: tf.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.01),
    "adagrad_da": lambda tf: tf.train.AdagradDAOptimizer(
        0.3, tf.train.get_or_create_global_step(), l1_regularization_strength=0.01),
}


def _train(tf, make_opt, shards, strategy, steps=4, dtype="float32"):
    """Losses and the full table after each of `steps` steps of a sharded lookup model."""
    g = tf.Graph()
    with g.as_default():
        table = _table(tf, shards, dtype=dtype) if shards else tf.get_variable(
            "emb", initializer=TABLE.astype(dtype))
        dense = tf.get_variable("dense", initializer=np.linspace(-1, 1, 4).astype(dtype).reshape(4, 1))
        ids = tf.placeholder(tf.int32, [None, 3])
        e = tf.nn.embedding_lookup(table, ids, partition_strategy=strategy)
        logits = tf.reduce_sum(tf.tensordot(e, dense, [[2], [0]]), axis=[1, 2])
        loss = tf.reduce_mean(tf.square(logits - tf.constant([0.3, -1.0, 0.5], getattr(tf, dtype))))
        opt = make_opt(tf)
        step = opt.minimize(loss)
        whole = tf.convert_to_tensor(table)
        slots = sorted(opt.get_slot_names())
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            out = []
            for i in range(steps):
                feed = {ids: np.roll(IDS, i, axis=1)}
                lv, _ = s.run([loss, step], feed)
                out.append([lv, s.run(whole), s.run(dense)])
            shard_vars = list(table) if shards else [table]
            out.append([s.run(opt.get_slot(v, n)) for v in shard_vars for n in slots])
    return out


def _close(want, got, rtol=1e-5, atol=1e-6):
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert len(w) == len(g)
        for x, y in zip(w, g):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
            np.testing.assert_allclose(y, x, rtol=rtol, atol=atol)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_training_a_partitioned_table_matches_tensorflow_step_by_step(tf1, opt, strategy):
    _close(_train(tf1, OPTIMIZERS[opt], 3, strategy), _train(fl, OPTIMIZERS[opt], 3, strategy))


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adam", "adagrad"])
def test_training_in_float64_matches_tensorflow(tf1, opt):
    _close(_train(tf1, OPTIMIZERS[opt], 2, "div", steps=3, dtype="float64"),
           _train(fl, OPTIMIZERS[opt], 2, "div", steps=3, dtype="float64"), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("shards", [2, 3, 4])
def test_partitioned_training_equals_whole_table_training(opt, shards):
    """"div" keeps contiguous rows per shard, so a partitioned table trains exactly as
    the one-piece table (slots included, shard by shard)."""
    whole = _train(fl, OPTIMIZERS[opt], 0, "div")
    parts = _train(fl, OPTIMIZERS[opt], shards, "div")
    _close(whole[:-1], parts[:-1], rtol=1e-6, atol=1e-7)
    n_slots = len(whole[-1])
    if n_slots:
        joined = [np.concatenate(parts[-1][k::n_slots]) for k in range(n_slots)]
        _close([whole[-1]], [joined], rtol=1e-6, atol=1e-7)


def test_only_looked_up_rows_change(tf1):
    def build(tf):
        pv = _table(tf, 3)
        e = tf.nn.embedding_lookup(pv, [1, 6], partition_strategy="div")
        step = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(e))
        with tf.control_dependencies([step]):
            return tf.identity(tf.concat([tf.identity(v) for v in pv], 0))

    out = assert_same(tf1, build)
    untouched = [0, 2, 3, 4, 5, 7, 8, 9, 10]
    np.testing.assert_array_equal(out[untouched], TABLE[untouched])
    assert not np.allclose(out[[1, 6]], TABLE[[1, 6]])


_UPDATES = ("Sparse", "Scatter", "Apply", "Assign")


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_sparse_updates_are_tensorflows_ops_on_each_shard(tf1, opt):
    got = []
    for tf in (tf1, fl):
        with tf.Graph().as_default() as g:
            pv = _table(tf, 3)
            e = tf.nn.embedding_lookup(pv, IDS, partition_strategy="div")
            before = set(g.get_operations())
            OPTIMIZERS[opt](tf).minimize(tf.reduce_sum(e * e))
            updates = sorted(
                (op.type, [i.op.name for i in op.inputs[:1]], op.colocation_groups())
                for op in g.get_operations()
                if op not in before and op.type.startswith(_UPDATES) and op.type != "AssignVariableOp")
        got.append(updates)
    want, mine = got
    assert mine == want
    # one sparse update per shard, colocated with it
    kinds = [t for t, _, _ in mine if t.startswith(("Sparse", "Scatter"))]
    assert kinds and len(kinds) % 3 == 0


@pytest.mark.parametrize("strategy,ids", [("mod", [0, 14]), ("div", [3, 11]), ("div", [-1])])
def test_out_of_range_ids_fail_as_in_tensorflow(tf1, strategy, ids):
    def build(tf):
        return tf.nn.embedding_lookup(_table(tf, 3), ids, partition_strategy=strategy)

    want, got = assert_same_error(tf1, build)
    assert type(got).__name__ == "InvalidArgumentError"


def test_unknown_strategy_is_tensorflows_error(tf1):
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError) as e:
                tf.nn.embedding_lookup(_table(tf, 2), [1], partition_strategy="stripe")
            out.append(str(e.value))
    assert out[1] == out[0]


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sparse_lookups_of_a_partitioned_variable_match_tensorflow(tf1, strategy):
    def build(tf):
        pv = _table(tf, 3)
        sp = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 2]], tf.constant([1, 10, 5, 7], tf.int64), [3, 3])
        w = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 2]], [1.0, 2.0, 0.5, 3.0], [3, 3])
        a = tf.nn.embedding_lookup_sparse(pv, sp, None, partition_strategy=strategy, combiner="sum")
        b = tf.nn.embedding_lookup_sparse(pv, sp, w, partition_strategy=strategy, combiner="sqrtn")
        c = tf.nn.safe_embedding_lookup_sparse(pv, sp, w, partition_strategy=strategy, combiner="mean")
        grads = tf.gradients(tf.reduce_sum(a * b) + tf.reduce_sum(c), list(pv))
        return [a, b, c, [[g.values, g.indices] for g in grads]]

    assert_same(tf1, build, rtol=1e-5)


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adagrad", "adam", "rmsprop", "ftrl", "adadelta",
                                 "proximal_adagrad"])
def test_training_graph_of_a_partitioned_lookup_is_tensorflows(tf1, opt):
    """Op for op (names, types, inputs, control inputs) the graph TF builds: shards,
    initializers, lookup, gradients, slots and updates.  (Colocation of initializer
    ops and of gradient tuples is compared elsewhere; the stitch is DynamicStitch.)"""
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default() as g:
            with tf.variable_scope("m", partitioner=tf.fixed_size_partitioner(3)):
                pv = tf.get_variable("emb", [11, 4])
            e = tf.nn.embedding_lookup(pv, tf.placeholder(tf.int32, [None]))
            OPTIMIZERS[opt](tf).minimize(tf.reduce_sum(e))
            out.append(sorted(
                (op.name, op.type.replace("ParallelDynamicStitch", "DynamicStitch"),
                 [i.name for i in op.inputs], sorted(c.name for c in op.control_inputs))
                for op in g.get_operations()))
    want, got = out
    assert got == want
