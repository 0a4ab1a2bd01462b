"""Partitioned variables against TensorFlow: `get_variable(partitioner=)` and the
scope's partitioner, the three partitioners' arithmetic, shard names, shapes and
save_slice_info, the graph's op names, conversion to a tensor, assignment,
`create_partitioned_variables`, reuse, and TensorFlow's errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

FULL = np.arange(40, dtype=np.float32).reshape(10, 4)


def _describe(tf, pv):
    return {
        "type": type(pv).__name__, "name": pv.name, "shape": pv.shape.as_list(),
        "get_shape": pv.get_shape().as_list(), "dtype": pv.dtype.name, "len": len(pv),
        "partitions": list(pv._get_partitions()),
        "shards": [(v.name, v.shape.as_list(), v.dtype.name) for v in pv],
        "list": [v.name for v in pv._get_variable_list()],
        "slices": [(i.full_name, list(i.full_shape), i.var_offset, i.var_shape, i.spec)
                   for i in (v._get_save_slice_info() for v in pv)],
        "global": [v.name for v in tf.global_variables()],
        "trainable": [v.name for v in tf.trainable_variables()],
    }


def _both(tf1, build):
    """`build(tf)` in a fresh graph of each framework -> (TensorFlow's, flowlab's)."""
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default() as g:
            out.append((build(tf), [op.name for op in g.get_operations()]))
    return out


@pytest.mark.parametrize("how", ["argument", "scope"])
@pytest.mark.parametrize("shards", [1, 3, 4, 12])
def test_fixed_size_shards_names_and_graph_match_tensorflow(tf1, how, shards):
    def build(tf):
        p = tf.fixed_size_partitioner(shards)
        if how == "argument":
            with tf.variable_scope("s"):
                pv = tf.get_variable("emb", [10, 4], initializer=FULL, partitioner=p)
        else:
            with tf.variable_scope("s", partitioner=p):
                pv = tf.get_variable("emb", [10, 4], initializer=FULL)
        t = tf.convert_to_tensor(pv)
        return _describe(tf, pv), t.name, t.op.type, [x.name for x in t.op.inputs]

    (want, want_ops), (got, got_ops) = _both(tf1, build)
    assert got == want
    assert got_ops == want_ops


@pytest.mark.parametrize("partitioner", [
    ("fixed", (3,), {}), ("fixed", (2,), {"axis": 1}), ("fixed", (50,), {}),
    ("min_max", (4,), {"min_slice_size": 16}), ("min_max", (), {}),
    ("min_max", (8,), {"axis": 1, "min_slice_size": 40}),
    ("axis_size", (40,), {}), ("axis_size", (40,), {"max_shards": 3}),
    ("axis_size", (1,), {}), ("axis_size", (64,), {"axis": 1}),
])
@pytest.mark.parametrize("shape,dtype", [([10, 4], "float32"), ([7, 3], "float64"), ([9, 5], "string")])
def test_partitioner_arithmetic_matches_tensorflow(tf1, partitioner, shape, dtype):
    kind, args, kwargs = partitioner
    for tf in (tf1, fl):
        make = {"fixed": tf.fixed_size_partitioner, "min_max": tf.min_max_variable_partitioner,
                "axis_size": tf.variable_axis_size_partitioner}[kind]
        p = make(*args, **kwargs)
        out = p(shape=tf.TensorShape(shape), dtype=getattr(tf, dtype))
        if tf is tf1:
            want = list(out)
        else:
            assert list(out) == want, (partitioner, shape, dtype)


def test_values_initializers_and_dtypes_match_tensorflow(tf1):
    def build(tf):
        tf.set_random_seed(7)
        p = tf.fixed_size_partitioner(3)
        a = tf.get_variable("a", [10, 4], initializer=FULL, partitioner=p)
        b = tf.get_variable("b", initializer=tf.constant(FULL * 2), partitioner=p)
        c = tf.get_variable("c", [7, 5], dtype=tf.float64, partitioner=p,
                            initializer=tf.random_uniform_initializer(-1.0, 1.0, seed=3))
        d = tf.get_variable("d", [9, 6], partitioner=tf.fixed_size_partitioner(2, axis=1),
                            initializer=tf.glorot_uniform_initializer(seed=5))
        e = tf.get_variable("e", [5, 2], dtype=tf.int32, partitioner=p)  # zeros by default
        f = tf.get_variable("f", [6, 3], partitioner=p,
                            initializer=tf.truncated_normal_initializer(seed=1))
        parts = [list(v) for v in (a, b, c, d, e, f)]
        return [tf.convert_to_tensor(v) for v in (a, b, c, d, e, f)] + [x for s in parts for x in s]

    out = assert_same(tf1, build)
    np.testing.assert_array_equal(out[0], FULL)
    np.testing.assert_array_equal(out[1], FULL * 2)


def test_as_tensor_and_convert_ignore_control_dependencies_like_tensorflow(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            pv = tf.get_variable("v", [6, 2], partitioner=tf.fixed_size_partitioner(2))
            c = tf.no_op(name="c")
            with tf.control_dependencies([c]):
                t = pv.as_tensor()
                u = tf.convert_to_tensor(pv)
                w = pv._concat()
            concat = w.op.inputs[0].op
            got = (t.name, u.name, w.name, [x.name for x in t.op.control_inputs],
                   [x.name for x in concat.inputs[-1].op.control_inputs])
            if tf is tf1:
                want = got
            else:
                assert got == want
    assert want[4] == ["c"]


def _staged(tf, build):
    """Run each stage `build(tf)` returns in its own `Session.run`, in order."""
    with tf.Graph().as_default():
        stages = build(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return [sess.run(st) for st in stages]


def _same_staged(tf1, build):
    want, got = _staged(tf1, build), _staged(fl, build)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        for x, y in zip(w, g):
            assert np.asarray(x).dtype == np.asarray(y).dtype
            np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    return got


def test_assign_in_one_op_per_shard_matches_tensorflow(tf1):
    def build(tf):
        pv = tf.get_variable("v", [5, 2], partitioner=tf.fixed_size_partitioner(2),
                             initializer=tf.zeros_initializer())
        ops = pv.assign(FULL[:5, :2])
        add = pv.assign_add([np.ones((3, 2), np.float32), np.ones((2, 2), np.float32)])
        sub = pv.assign_sub(np.full((5, 2), 0.5, np.float32))
        other = tf.get_variable("w", [5, 2], partitioner=tf.fixed_size_partitioner(2),
                                initializer=tf.ones_initializer())
        copy = pv.assign(other)  # from another PartitionedVariable, shard by shard
        t = pv.as_tensor()
        return [ops, [t], add, sub, [t], copy, [t]]

    out = _same_staged(tf1, build)
    np.testing.assert_array_equal(out[4][0], FULL[:5, :2] + 0.5)
    np.testing.assert_array_equal(out[6][0], np.ones((5, 2), np.float32))


def test_tf_assign_dispatches_to_the_partitioned_variable(tf1):
    def build(tf):
        pv = tf.get_variable("v", [5, 2], partitioner=tf.fixed_size_partitioner(2),
                             initializer=tf.zeros_initializer())
        a = tf.assign(pv, FULL[:5, :2])
        b = tf.assign_add(pv, np.ones((5, 2), np.float32))
        c = tf.assign_sub(pv, np.full((5, 2), 0.25, np.float32))
        assert [t.op.name for t in a] == ["Assign", "Assign_1"]
        t = tf.convert_to_tensor(pv)
        return [a, b, c, [t]]

    out = _same_staged(tf1, build)
    np.testing.assert_array_equal(out[3][0], FULL[:5, :2] + 0.75)


def test_create_partitioned_variables_matches_tensorflow(tf1):
    def build(tf):
        a = tf.create_partitioned_variables([5, 2], [1, 2], tf.ones_initializer())
        b = tf.create_partitioned_variables([10, 4], [3, 1], FULL, name="cp")
        with tf.variable_scope("outer"):
            c = tf.create_partitioned_variables([4, 4], [4, 1], tf.zeros_initializer(), dtype=tf.float64,
                                                trainable=False)
        names = [[(v.name, v.shape.as_list(), v._get_save_slice_info().spec) for v in p] for p in (a, b, c)]
        return names, [v.name for v in tf.trainable_variables()]

    (want, want_ops), (got, got_ops) = _both(tf1, build)
    assert got == want and got_ops == want_ops

    def values(tf):
        b = tf.create_partitioned_variables([10, 4], [3, 1], FULL, name="cp")
        return b

    assert_same(tf1, values)


def test_reuse_returns_the_same_partitioned_variable(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            p = tf.fixed_size_partitioner(3)
            with tf.variable_scope("s", partitioner=p):
                pv = tf.get_variable("emb", [10, 4])
            with tf.variable_scope("s", reuse=True):
                assert tf.get_variable("emb") is pv  # no partitioner needed on reuse
                assert tf.get_variable("emb", [10, 4], partitioner=p) is pv
            with tf.variable_scope("s", reuse=tf.AUTO_REUSE, partitioner=p):
                assert tf.get_variable("emb", [10, 4]) is pv
                assert tf.get_variable("new", [4, 4]) is not pv
            scalar = tf.get_variable("scalar", [], partitioner=p)  # scalars are never cut
            assert type(scalar).__name__ != "PartitionedVariable"


def _error(tf, fn):
    try:
        fn(tf)
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e).__name__, str(e)
    raise AssertionError(f"{tf.__name__} did not raise")


ERRORS = {
    "partitioned then plain": lambda tf: (
        tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2)),
        tf.get_variable("v", [4, 2])),
    "plain then partitioned": lambda tf: (
        tf.get_variable("v", [4, 2]),
        tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2))),
    "twice": lambda tf: [tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2))
                         for _ in range(2)],
    "reuse missing": lambda tf: _in_reuse(tf, lambda: tf.get_variable(
        "v", [4, 2], partitioner=tf.fixed_size_partitioner(2))),
    "reuse other shape": lambda tf: (
        tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2)),
        _in_reuse(tf, lambda: tf.get_variable("v", [4, 3], partitioner=tf.fixed_size_partitioner(2)))),
    "reuse other dtype": lambda tf: (
        tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2)),
        _in_reuse(tf, lambda: tf.get_variable("v", [4, 2], dtype=tf.float64,
                                              partitioner=tf.fixed_size_partitioner(2)))),
    "reuse other partitions": lambda tf: (
        tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2)),
        _in_reuse(tf, lambda: tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(4)))),
    "not callable": lambda tf: tf.get_variable("v", [4, 2], partitioner=3),
    "unknown shape": lambda tf: tf.get_variable("v", partitioner=tf.fixed_size_partitioner(2),
                                                initializer=tf.zeros_initializer()),
    "two axes": lambda tf: tf.get_variable("v", [4, 2], partitioner=lambda shape, dtype: [2, 2]),
    "wrong rank": lambda tf: tf.get_variable("v", [4, 2], partitioner=lambda shape, dtype: [2]),
    "zero": lambda tf: tf.get_variable("v", [4, 2], partitioner=lambda shape, dtype: [0, 1]),
    "not a sequence": lambda tf: tf.get_variable("v", [4, 2], partitioner=lambda shape, dtype: 2),
    "bad axis": lambda tf: tf.get_variable("v", [4, 2], partitioner=tf.min_max_variable_partitioner(2, axis=2)),
    "bad max bytes": lambda tf: tf.variable_axis_size_partitioner(0),
    "bad max shards": lambda tf: tf.variable_axis_size_partitioner(10, max_shards=-1),
    "axis size unknown shape": lambda tf: tf.variable_axis_size_partitioner(10)(
        shape=tf.TensorShape([None, 2]), dtype=tf.float32),
    "create rank mismatch": lambda tf: tf.create_partitioned_variables([4, 2], [2], tf.zeros_initializer()),
    "create rank 0": lambda tf: tf.create_partitioned_variables([], [], tf.zeros_initializer()),
    "dtype conversion": lambda tf: tf.convert_to_tensor(
        tf.get_variable("v", [4, 2], partitioner=tf.fixed_size_partitioner(2)), dtype=tf.int32),
    "multi-axis len": lambda tf: len(_container(tf)(
        "x", [2, 2], tf.float32, _sliced(tf, [[0, 0], [0, 1], [1, 0], [1, 1]]), [2, 2])),
    "container empty": lambda tf: _container(tf)("x", [2, 2], tf.float32, [], [1, 1]),
    "container not a list": lambda tf: _container(tf)("x", [2, 2], tf.float32, 3, [1, 1]),
    "container bad partitions": lambda tf: _container(tf)("x", [2, 2], tf.float32, [], [0, 1]),
    "container full shape": lambda tf: _container(tf)(
        "x", [2, 3], tf.float32, _sliced(tf, [[0, 0]]), [1, 1]),
    "container rank": lambda tf: _container(tf)("x", [2, 2], tf.float32, _sliced(tf, [[0, 0]]), [1]),
}


def _container(tf):
    # tf.compat.v1 does not export the class (TF 1.x had tf.PartitionedVariable).
    if tf is fl:
        return fl.PartitionedVariable
    from tensorflow.python.ops.variables import PartitionedVariable

    return PartitionedVariable


def _in_reuse(tf, fn):
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        return fn()


def _sliced(tf, offsets):
    vs = []
    for i, off in enumerate(offsets):
        v = tf.Variable(np.zeros((1, 1), np.float32), name=f"x{i}")
        v._set_save_slice_info(tf.Variable.SaveSliceInfo("x", [2, 2], off, [1, 1]))
        vs.append(v)
    return vs


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_tensorflow(tf1, case):
    want = got = None
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            e = _error(tf, ERRORS[case])
        if tf is tf1:
            want = e
        else:
            got = e
    assert got[0] == want[0], (got, want)
    assert got[1] == want[1].replace("tf.compat.v1.", "tf."), (got, want)


def test_initializer_partition_info_regularizer_getter_and_local_match_tensorflow(tf1):
    def build(tf):
        seen = []

        def init(shape, dtype=None, partition_info=None):
            seen.append((list(shape), list(partition_info.full_shape), list(partition_info.var_offset),
                         partition_info.single_offset(shape), partition_info.single_slice_dim(shape)))
            return tf.ones(shape, dtype) * float(partition_info.single_offset(shape))

        w = tf.get_variable("w", [5, 2], initializer=init, partitioner=tf.fixed_size_partitioner(2),
                            regularizer=lambda t: tf.reduce_sum(t) * 0.5)
        calls = []

        def getter(getter, name, *args, **kwargs):
            calls.append((name, kwargs.get("partitioner") is not None))
            return getter(name, *args, **kwargs)

        with tf.variable_scope("c", custom_getter=getter, partitioner=tf.fixed_size_partitioner(3)):
            c = tf.get_variable("x", [6, 1])
        loc = tf.get_local_variable("loc", [4, 1], partitioner=tf.fixed_size_partitioner(2),
                                    initializer=tf.constant_initializer(2.0))
        frozen = tf.get_variable("frozen", [4, 1], partitioner=tf.fixed_size_partitioner(2), trainable=False)
        losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        names = (seen, calls, [v.name for v in c], [t.name for t in losses],
                 [v.name for v in tf.local_variables()], [v.name for v in tf.trainable_variables()],
                 [v.name for v in frozen])
        return names, tf.convert_to_tensor(w), losses, tf.add_n(losses), list(loc)

    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            names, *fetches = build(tf)
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
                out.append((names, sess.run(fetches)))
    (w_names, w_vals), (g_names, g_vals) = out
    assert g_names == w_names
    assert w_names[0] == [([3, 2], [5, 2], [0, 0], 0, 0), ([2, 2], [5, 2], [3, 0], 3, 0)]
    np.testing.assert_array_equal(g_vals[0], w_vals[0])
    for a, b in zip(g_vals[1:], w_vals[1:]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_partition_info_checks_match_tensorflow(tf1):
    from tensorflow.python.ops.variable_scope import _PartitionInfo

    from flowlab.ops.partitioned_variables import PartitionInfo

    cases = [((4, 2), [0, 0]), ([4, 2], (0,)), ([4, 2], [4, 0]), ([4, 2], [-1, 0])]
    for full, off in cases:
        errs = []
        for cls in (_PartitionInfo, PartitionInfo):
            try:
                cls(full_shape=full, var_offset=off) if isinstance(full, list) else cls(full, 3)
            except Exception as e:  # noqa: BLE001 - compared below
                errs.append((type(e).__name__, str(e)))
        assert len(errs) == 2 and errs[0] == errs[1], errs
    calls = [([2, 2], None), ((2, 2), "type"), ([2], "len"), ([3, 3], "exceed"), ([1, 1], "two dims")]
    for shape, _ in calls:
        res = []
        for cls in (_PartitionInfo, PartitionInfo):
            p = cls(full_shape=[4, 2], var_offset=[1, 0])
            try:
                res.append(("ok", p.single_slice_dim(shape), p.single_offset(shape)))
            except Exception as e:  # noqa: BLE001 - compared below
                res.append((type(e).__name__, str(e)))
        assert res[0] == res[1], res


@pytest.mark.parametrize("axis", [0, 1])
def test_dense_use_and_training_of_a_partitioned_weight_match_tensorflow(tf1, axis):
    """A partitioned weight used as a tensor (matmul): the concat's gradient slices
    back into one dense gradient per shard, and the optimizer updates each shard."""
    x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)

    def build(tf):
        w = tf.get_variable("w", [4, 5], partitioner=tf.fixed_size_partitioner(3, axis=axis),
                            initializer=tf.random_normal_initializer(seed=2))
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 0.5))
        grads = tf.gradients(loss, list(w))
        step = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
        return [loss, step, grads, tf.convert_to_tensor(w)]

    for tf in (tf1, fl):
        with tf.Graph().as_default():
            loss, step, grads, whole = build(tf)
            assert not any(isinstance(g, tf.IndexedSlices) for g in grads)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                runs = [sess.run([loss, grads]) + [sess.run(step), sess.run(whole)] for _ in range(3)]
        if tf is tf1:
            want = runs
    for w_run, g_run in zip(want, runs):
        np.testing.assert_allclose(g_run[0], w_run[0], rtol=1e-5)
        for a, b in zip(g_run[1], w_run[1]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_run[3], w_run[3], rtol=1e-5, atol=1e-6)
