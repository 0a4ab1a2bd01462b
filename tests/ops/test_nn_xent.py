"""The softmax cross entropies: SoftmaxCrossEntropyWithLogits (TF1's v1 and _v2
builders, axis/dim, higher ranks, broadcasting of the raw op) and
SparseSoftmaxCrossEntropyWithLogits (int32/int64 labels, higher ranks, labels out of
range) -- values against NumPy and TensorFlow, stability on +-1000 logits, build-time
and runtime errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowlab as fl
from flowlab.ops.builder import apply_op
from tests.difftest import assert_same, assert_same_error
from tests.ops.nn_testing import FLOATS, feed, np_softmax, np_xent, raw, run


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_sparse_xent_and_top_k_property(data):
    fl.reset_default_graph()
    dtype = data.draw(st.sampled_from(FLOATS))
    batch, classes = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    x = data.draw(hnp.arrays(dtype, (batch, classes), elements=st.floats(-1e3, 1e3, width=32)))
    z = np.array(data.draw(st.lists(st.integers(0, classes - 1), min_size=batch, max_size=batch)))
    k = data.draw(st.integers(0, classes))
    loss, backprop = apply_op("SparseSoftmaxCrossEntropyWithLogits", features=x, labels=z)
    values, indices = fl.nn.top_k(x, k)
    loss, backprop, values, indices = run([loss, backprop, values, indices])
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(loss, np_xent(np.eye(classes)[z], x64), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(backprop, np_softmax(x64) - np.eye(classes)[z], atol=1e-5)
    order = np.lexsort((np.arange(classes)[None].repeat(batch, 0), -x64), axis=-1)[:, :k]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, -1))



# --- softmax cross entropy ----------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", ["softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2"])
def test_softmax_xent_values(tf1, dtype, fn):
    rs = np.random.RandomState(2)
    logits = (rs.randn(4, 5) * 3).astype(dtype)
    logits[0] = [1000, -1000, 0, 5, -5]
    labels = rs.dirichlet(np.ones(5), 4).astype(dtype)
    labels[1] = [0, 0, 1, 0, 0]

    def build(tf):
        x, fx = feed(tf, logits)
        z, fz = feed(tf, labels)
        return getattr(tf.nn, fn)(labels=z, logits=x), {**fx, **fz}

    out = assert_same(tf1, build)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, np_xent(labels.astype(np.float64), logits.astype(np.float64)), rtol=1e-5)


def test_softmax_xent_3d_and_axis(tf1):
    rs = np.random.RandomState(3)
    logits = rs.randn(2, 3, 4).astype(np.float32)
    labels0 = np.moveaxis(rs.dirichlet(np.ones(2), (3, 4)), -1, 0).astype(np.float32)
    labels1 = np.moveaxis(rs.dirichlet(np.ones(3), (2, 4)), -1, 1).astype(np.float32)

    def build(tf):
        x, fx = feed(tf, logits)
        z0, f0 = feed(tf, labels0)
        z1, f1 = feed(tf, labels1)
        return [
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=z0, logits=x, axis=0),
            tf.nn.softmax_cross_entropy_with_logits(labels=z1, logits=x, dim=1),
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.nn.softmax(x), logits=x),
        ], {**fx, **f0, **f1}

    out = assert_same(tf1, build)
    np.testing.assert_allclose(out[0], np_xent(labels0, logits, 0), rtol=1e-5)
    np.testing.assert_allclose(out[1], np_xent(labels1, logits, 1), rtol=1e-5)


def test_softmax_xent_negative_axis():
    # TensorFlow 2.21 fails to build this (its Range gets a negative limit); flowlab
    # computes the loss along the axis.
    rs = np.random.RandomState(3)
    logits = rs.randn(2, 3, 4)
    labels = np.moveaxis(rs.dirichlet(np.ones(3), (2, 4)), -1, 1)
    loss = fl.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=-2)
    assert loss.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(loss), np_xent(labels, logits, 1), rtol=1e-12)


def test_softmax_xent_unknown_shapes(tf1):
    logits = np.random.RandomState(4).randn(2, 3, 5).astype(np.float64)
    labels = np.full((2, 3, 5), 0.2)

    def build(tf):
        x, fx = feed(tf, logits, shape=None)
        z, fz = feed(tf, labels, shape=[None, None, None])
        return tf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x), {**fx, **fz}

    assert_same(tf1, build)


def test_softmax_xent_names_shapes_and_labels_cast():
    x = fl.placeholder(fl.float32, [None, 5])
    loss = fl.nn.softmax_cross_entropy_with_logits_v2(labels=[[0.0, 1, 0, 0, 0]], logits=x)
    # As in TensorFlow: the kernel on flattened inputs, reshaped back to logits.shape[:-1].
    assert (loss.op.type, loss.op.name) == ("Reshape", "softmax_cross_entropy_with_logits/Reshape_2")
    xent = loss.op.inputs[0].op
    assert (xent.type, xent.name) == ("SoftmaxCrossEntropyWithLogits", "softmax_cross_entropy_with_logits")
    assert loss.shape.as_list() == [None]
    v1 = fl.nn.softmax_cross_entropy_with_logits(labels=fl.zeros([3, 5]), logits=x)
    xent = v1.op.inputs[0].op
    assert (xent.type, xent.name) == ("SoftmaxCrossEntropyWithLogits", "softmax_cross_entropy_with_logits_sg")
    assert xent.inputs[1].op.inputs[0].op.type == "StopGradient"  # Reshape(StopGradient(labels))
    assert fl.nn.softmax_cross_entropy_with_logits_v2(
        labels=fl.zeros([2, 3, 5], fl.float64), logits=fl.zeros([2, 3, 5], fl.float64)
    ).shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match="Both `labels` and `logits` must be provided"):
        fl.nn.softmax_cross_entropy_with_logits_v2(logits=x)
    with pytest.raises(ValueError, match="named arguments"):
        fl.nn.softmax_cross_entropy_with_logits(x, x)


def test_softmax_xent_shape_mismatch(tf1):
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 5 and 4 for "
                                         "'softmax_cross_entropy_with_logits'"):
        fl.nn.softmax_cross_entropy_with_logits_v2(labels=fl.zeros([2, 4]), logits=fl.zeros([2, 5]))

    def build(tf):
        x, fx = feed(tf, np.zeros([2, 5], np.float32), shape=[None, None])
        z, fz = feed(tf, np.zeros([2, 4], np.float32), shape=[None, None])
        return tf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x), {**fx, **fz}

    _, err = assert_same_error(tf1, build)
    assert "logits and labels must be broadcastable: logits_size=[2,5] labels_size=[2,4]" in str(err)


@pytest.mark.parametrize(
    "fshape, lshape", [((2, 5), (1, 5)), ((1, 5), (3, 5)), ((5,), (2, 5)), ((2, 5), (5,)), ((0, 3), (0, 3)),
                       ((2, 0), (2, 0))]
)
def test_softmax_xent_raw_op_broadcasting(tf1, fshape, lshape):
    rs = np.random.RandomState(5)
    f, z = rs.randn(*fshape).astype(np.float32), rs.rand(*lshape).astype(np.float32)
    assert_same(tf1, lambda tf: raw(tf, "SoftmaxCrossEntropyWithLogits", features=f, labels=z))


def test_softmax_xent_raw_op_rank_errors(tf1):
    with pytest.raises(ValueError, match="Shape must be broadcasted with rank 2, but is rank 3"):
        apply_op("SoftmaxCrossEntropyWithLogits", features=fl.zeros([1, 2, 5]), labels=fl.zeros([1, 2, 5]))

    def build(tf):
        x, fx = feed(tf, np.zeros([5], np.float32), shape=None)
        return raw(tf, "SoftmaxCrossEntropyWithLogits", features=x, labels=x), fx

    _, err = assert_same_error(tf1, build)
    assert "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional" in str(err)


def test_softmax_xent_infinite_logits(tf1):
    def build(tf):
        x, fx = feed(tf, [[-np.inf, 0.0], [-np.inf, 0.0], [1000.0, -1000.0]], np.float32)
        z, fz = feed(tf, [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], np.float32)
        return raw(tf, "SoftmaxCrossEntropyWithLogits", features=x, labels=z), {**fx, **fz}

    (loss, _) = assert_same(tf1, build)
    assert loss[0] == np.inf and np.isnan(loss[1]) and loss[2] == 2000.0


# --- sparse softmax cross entropy ---------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ltype", [np.int32, np.int64])
def test_sparse_xent_values(tf1, dtype, ltype):
    rs = np.random.RandomState(6)
    logits = (rs.randn(4, 5) * 4).astype(dtype)
    logits[0] = [1000, -1000, 0, 3, 4]
    labels = np.array([1, 0, 4, 2], ltype)

    def build(tf):
        x, fx = feed(tf, logits)
        z, fz = feed(tf, labels)
        return [tf.nn.sparse_softmax_cross_entropy_with_logits(labels=z, logits=x),
                raw(tf, "SparseSoftmaxCrossEntropyWithLogits", features=x, labels=z)], {**fx, **fz}

    loss, (raw_loss, backprop) = assert_same(tf1, build)
    assert loss[0] == 2000.0
    np.testing.assert_allclose(loss, np_xent(np.eye(5)[labels], logits.astype(np.float64)), rtol=1e-5)
    np.testing.assert_allclose(backprop, np_softmax(logits.astype(np.float64)) - np.eye(5)[labels], atol=1e-6)


def test_sparse_xent_higher_rank_and_unknown_shapes(tf1):
    rs = np.random.RandomState(7)
    logits = rs.randn(2, 3, 4)
    labels = np.array([[1, 2, 3], [0, 0, 2]])

    def build(tf):
        x, fx = feed(tf, logits)
        z, fz = feed(tf, labels)
        xu, fxu = feed(tf, logits, shape=[None, None, None])
        zu, fzu = feed(tf, labels, shape=[None, None])
        return [tf.nn.sparse_softmax_cross_entropy_with_logits(labels=z, logits=x),
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=zu, logits=xu)], {**fx, **fz, **fxu, **fzu}

    assert_same(tf1, build)

    def unknown_rank(tf):
        x, fx = feed(tf, logits, shape=None)
        z, fz = feed(tf, labels, shape=None)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=z, logits=x), {**fx, **fz}

    assert_same(tf1, unknown_rank)
    y = fl.nn.sparse_softmax_cross_entropy_with_logits(labels=fl.zeros([2, 3], fl.int32), logits=fl.zeros([2, 3, 4]))
    assert y.shape.as_list() == [2, 3] and y.dtype == fl.float32


def test_sparse_xent_names_and_shapes():
    x = fl.placeholder(fl.float32, [None, 5])
    y = fl.nn.sparse_softmax_cross_entropy_with_logits(labels=fl.placeholder(fl.int64, [None]), logits=x)
    assert y.op.type == "SparseSoftmaxCrossEntropyWithLogits"
    assert y.op.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"
    assert y.op.get_attr("Tlabels") == fl.int64 and y.shape.as_list() == [None]
    assert y.op.outputs[1].shape.as_list() == [None, 5]


@pytest.mark.parametrize(
    "labels, message",
    [
        ([7, 1], r"Received a label value of 7 which is outside the valid range of \[0, 5\).  Label values: 7 1"),
        ([-1, 1], r"Received a label value of -1 which is outside the valid range of \[0, 5\)"),
        ([9, -1], r"Received a label value of -1 which"),
    ],
)
def test_sparse_xent_label_out_of_range(tf1, labels, message):
    def build(tf):
        z, fz = feed(tf, labels, np.int32, shape=[None])
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=z, logits=tf.zeros([2, 5])), fz

    _, err = assert_same_error(tf1, build)
    assert isinstance(err, fl.errors.InvalidArgumentError)
    assert re.search(message, str(err))


def test_sparse_xent_build_errors():
    with pytest.raises(ValueError, match=r"`labels.shape.rank` must equal `logits.shape.rank - 1`"):
        fl.nn.sparse_softmax_cross_entropy_with_logits(labels=[[1]], logits=fl.zeros([2, 5]))
    with pytest.raises(ValueError, match=r"`labels.shape` must equal `logits.shape` except for the last"):
        fl.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2, 3], logits=fl.zeros([2, 5]))
    with pytest.raises(ValueError, match="`logits` cannot be a scalar"):
        fl.nn.sparse_softmax_cross_entropy_with_logits(labels=1, logits=1.0)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for "
                                         "'SparseSoftmaxCrossEntropyWithLogits.*' \\(op: "):
        apply_op("SparseSoftmaxCrossEntropyWithLogits", features=fl.zeros([2, 5]), labels=[1, 2, 3])
    with pytest.raises(TypeError, match="'labels' has DataType float32"):
        apply_op("SparseSoftmaxCrossEntropyWithLogits", features=fl.zeros([2, 5]), labels=fl.zeros([2]))


@pytest.mark.parametrize(
    "fshape, lshape, message",
    [
        ((5,), (1,), r"logits must be 2-D, but got shape \[5\]"),
        ((2, 5), (2, 1), r"labels must be 1-D, but got shape \[2,1\]"),
        ((2, 5), (3,), r"logits and labels must have the same first dimension, got logits shape \[2,5\] "
                       r"and labels shape \[3\]"),
        ((2, 0), (2,), r"Must have at least one class, but got logits shape \[2,0\]"),
    ],
)
def test_sparse_xent_raw_runtime_errors(tf1, fshape, lshape, message):
    def build(tf):
        x, fx = feed(tf, np.zeros(fshape, np.float32), shape=None)
        z, fz = feed(tf, np.zeros(lshape, np.int32), shape=None)
        return raw(tf, "SparseSoftmaxCrossEntropyWithLogits", features=x, labels=z), {**fx, **fz}

    _, err = assert_same_error(tf1, build)
    assert re.search(message, str(err))


def test_sparse_xent_empty_batch(tf1):
    assert_same(tf1, lambda tf: raw(tf, "SparseSoftmaxCrossEntropyWithLogits",
                                    features=np.zeros([0, 3], np.float32), labels=np.zeros([0], np.int32)))
