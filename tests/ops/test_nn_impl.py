"""The `tf.nn` functions composed from other ops (flowlab.ops.nn_impl): sigmoid,
weighted and log-Poisson losses, xw_plus_b, relu_layer, crelu, l2_normalize, moments,
batch_normalization and dropout -- values and dtypes against TensorFlow and NumPy,
the ops they are built from, large logits, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.nn_testing import FLOATS, feed


def op_types():
    return [op.type for op in fl.get_default_graph().get_operations()]


# --- sigmoid and weighted cross entropy ---------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_sigmoid_xent(tf1, dtype):
    x = np.array([[1000, -1000, 0, 1], [-1, 0, 30, -30]], dtype)
    z = np.array([[0, 1, 0.5, 1], [0, 1, 0.25, 1]], dtype)

    def build(tf):
        a, fa = feed(tf, x)
        b, fb = feed(tf, z)
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a), {**fa, **fb}

    out = assert_same(tf1, build)
    xd, zd = x.astype(np.float64), z.astype(np.float64)
    np.testing.assert_allclose(out, np.maximum(xd, 0) - xd * zd + np.log1p(np.exp(-np.abs(xd))), rtol=1e-6)
    assert out[0, 0] == 1000 and out[0, 1] == 1000


def test_sigmoid_xent_structure_and_errors():
    y = fl.nn.sigmoid_cross_entropy_with_logits(labels=fl.zeros([2, 3]), logits=fl.ones([2, 3]))
    assert (y.op.type, y.op.name) == ("AddV2", "logistic_loss")
    types = {op.type for op in fl.get_default_graph().get_operations()}
    assert {"Select", "GreaterEqual", "Log1p", "Exp"} <= types  # TensorFlow's composite
    with pytest.raises(ValueError, match=r"`logits` and `labels` must have the same shape, received \(\(3, 2\) vs \(2, 3\)\)"):
        fl.nn.sigmoid_cross_entropy_with_logits(labels=fl.zeros([2, 3]), logits=fl.zeros([3, 2]))
    with pytest.raises(ValueError, match="Both `labels` and `logits` must be provided"):
        fl.nn.sigmoid_cross_entropy_with_logits(logits=fl.zeros([3, 2]))


def test_weighted_xent(tf1):
    x = np.array([1000.0, -1000.0, 0.0, 2.0, -3.0], np.float32)
    z = np.array([0.0, 1.0, 0.5, 1.0, 0.0], np.float32)

    def build(tf):
        a, fa = feed(tf, x)
        b, fb = feed(tf, z)
        return [tf.nn.weighted_cross_entropy_with_logits(labels=b, logits=a, pos_weight=3.0),
                tf.nn.weighted_cross_entropy_with_logits(targets=b, logits=a, pos_weight=0.5)], {**fa, **fb}

    assert_same(tf1, build)


# --- xw_plus_b, l2_normalize, moments -----------------------------------------------
def test_xw_plus_b(tf1):
    rs = np.random.RandomState(8)
    x, w, b = rs.randn(3, 4), rs.randn(4, 2), rs.randn(2)
    out = assert_same(tf1, lambda tf: tf.nn.xw_plus_b(x, w, b))
    np.testing.assert_allclose(out, x @ w + b)
    y = fl.nn.xw_plus_b(fl.placeholder(fl.float32, [None, 4]), fl.zeros([4, 2]), fl.zeros([2]))
    assert (y.op.type, y.op.name, y.shape.as_list()) == ("BiasAdd", "xw_plus_b", [None, 2])
    assert y.op.inputs[0].op.name == "xw_plus_b/MatMul"


def test_l2_normalize(tf1):
    x = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    axes = [None, 0, 1, [0, 1], -1]
    assert_same(tf1, lambda tf: [[tf.nn.l2_normalize(x, axis),
                                  tf.nn.l2_normalize(x.astype(np.float64), dim=axis, epsilon=1e-3)]
                                 for axis in axes])
    y = fl.nn.l2_normalize(fl.placeholder(fl.float32, [None, 3]), 1)
    assert (y.op.type, y.op.name, y.shape.as_list()) == ("Mul", "l2_normalize", [None, 3])


@pytest.mark.parametrize("keep", [False, True])
def test_moments(tf1, keep):
    x = np.random.RandomState(9).randn(4, 3).astype(np.float32) * 5 + 2
    cases = [[0], [1], [0, 1], [-1]]
    out = assert_same(tf1, lambda tf: [list(tf.nn.moments(tf.constant(x), axes, keep_dims=keep)) for axes in cases],
                      rtol=1e-5)
    for axes, (mean, var) in zip(cases, out):
        np.testing.assert_allclose(mean, x.mean(axis=tuple(axes), keepdims=keep), rtol=1e-5)
        np.testing.assert_allclose(var, x.var(axis=tuple(axes), keepdims=keep), rtol=1e-4)


def test_moments_float16_and_names(tf1):
    x = np.array([[1.0, 2.0], [3.0, 5.0]], np.float16)
    assert_same(tf1, lambda tf: list(tf.nn.moments(tf.constant(x), [0], keepdims=True)), rtol=1e-3)
    mean, var = fl.nn.moments(fl.placeholder(fl.float32, [None, 3]), [0])
    assert mean.shape.as_list() == [3] and var.shape.as_list() == [3]
    names = [op.name for op in fl.get_default_graph().get_operations()]
    assert "moments/mean" in names and "moments/variance" in names



# --- relu_layer, crelu, batch_normalization, log_poisson_loss -----------------------
def test_relu_layer_and_crelu(tf1):
    rs = np.random.RandomState(10)
    x, w, b = rs.randn(3, 4).astype(np.float32), rs.randn(4, 2).astype(np.float32), rs.randn(2).astype(np.float32)
    out = assert_same(tf1, lambda tf: [tf.nn.relu_layer(x, w, b), tf.nn.crelu(x), tf.nn.crelu(x, axis=0)], rtol=1e-5)
    np.testing.assert_allclose(out[0], np.maximum(x @ w + b, 0), rtol=1e-5)
    np.testing.assert_array_equal(out[1], np.maximum(np.concatenate([x, -x], -1), 0))
    y = fl.nn.crelu(fl.placeholder(fl.float32, [None, 3]))
    assert (y.op.type, y.op.name, y.shape.as_list()) == ("Relu", "CRelu/Relu", [None, 6])
    z = fl.nn.relu_layer(fl.placeholder(fl.float32, [None, 4]), w, b)
    assert (z.op.type, z.op.name) == ("Relu", "relu_layer")


@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_normalization(tf1, dtype):
    rs = np.random.RandomState(11)
    x = rs.randn(4, 3).astype(dtype) * 3 + 1
    mean, var = x.mean(0), x.var(0)
    offset, scale = rs.randn(3).astype(dtype), rs.rand(3).astype(dtype) + 0.5

    def build(tf):
        p, fd = feed(tf, x)
        m, v = tf.nn.moments(p, [0])
        return [tf.nn.batch_normalization(p, m, v, offset, scale, 1e-3),
                tf.nn.batch_normalization(p, m, v, None, None, 1e-3),
                tf.nn.batch_normalization(p, tf.constant(mean), tf.constant(var), tf.constant(offset), None, 0.0)], fd

    out = assert_same(tf1, build, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[0], (x - mean) / np.sqrt(var + 1e-3) * scale + offset, rtol=1e-4, atol=1e-5)


def test_log_poisson_loss(tf1):
    targets = np.array([0.0, 0.5, 1.0, 2.0, 7.0], np.float32)
    log_input = np.array([-1.0, 0.0, 0.3, 1.5, 2.0], np.float32)

    def build(tf):
        t, ft = feed(tf, targets)
        li, fl_ = feed(tf, log_input)
        return [tf.nn.log_poisson_loss(t, li), tf.nn.log_poisson_loss(t, li, compute_full_loss=True)], {**ft, **fl_}

    out = assert_same(tf1, build, rtol=1e-6)
    np.testing.assert_allclose(out[0], np.exp(log_input) - log_input * targets, rtol=1e-6)
    with pytest.raises(ValueError, match="`log_input` and `targets` must have the same shape"):
        fl.nn.log_poisson_loss(fl.zeros([2]), fl.zeros([3]))


# --- dropout ------------------------------------------------------------------------
X = np.arange(1, 13, dtype=np.float32).reshape(3, 4)


def test_dropout_same_masks_as_tensorflow(tf1):
    def build(tf):
        tf.set_random_seed(5)
        p, fd = feed(tf, X, shape=[None, 4])
        return [tf.nn.dropout(p, keep_prob=0.6, seed=3),
                tf.nn.dropout(p, rate=0.5, noise_shape=[3, 1], seed=7),
                tf.nn.dropout(p, rate=0.5, noise_shape=[1, 4], seed=7),
                tf.nn.dropout(tf.cast(p, tf.float64), 0.3, seed=2)], fd

    out = assert_same(tf1, build, rtol=0, atol=0)
    kept = out[0] != 0
    np.testing.assert_allclose(out[0][kept], X[kept] / np.float32(0.6), rtol=1e-6)
    assert all((row == 0).all() or (row != 0).all() for row in out[1])  # one draw per row
    assert all((col == 0).all() or (col != 0).all() for col in out[2].T)  # one per column


def test_dropout_tensor_rate(tf1):
    def build(tf):
        tf.set_random_seed(1)
        p, fd = feed(tf, X)
        r, fr = feed(tf, 0.25, np.float32, shape=[])
        return [tf.nn.dropout(p, rate=tf.constant(0.25), seed=1), tf.nn.dropout(p, rate=r, seed=4)], {**fd, **fr}

    # TensorFlow's optimizer may turn x / 0.75 into x * (1 / 0.75): an ulp apart.
    out = assert_same(tf1, build, rtol=1e-6)
    assert out[0].dtype == np.float32 and (out[0] == 0).any()


def test_dropout_structure_and_shapes():
    p = fl.placeholder(fl.float32, [None, 4])
    y = fl.nn.dropout(p, keep_prob=0.5)
    assert (y.op.type, y.op.name, y.shape.as_list()) == ("SelectV2", "dropout/SelectV2", [None, 4])
    assert {"RandomUniform", "GreaterEqual", "Mul", "Shape"} <= set(op_types())
    assert fl.nn.dropout(p, rate=0.0) is p
    with fl.Session() as s:
        out = s.run(fl.nn.dropout(fl.ones([200, 50]), rate=0.2, seed=1))
    assert set(np.unique(out).tolist()) <= {0.0, np.float32(1.25)}
    assert 0.15 < (out == 0).mean() < 0.25


def test_dropout_errors():
    p = fl.placeholder(fl.float32, [None, 4])
    with pytest.raises(ValueError, match=r"`rate` must be a scalar tensor or a float in the range \[0, 1\)"):
        fl.nn.dropout(p, rate=1.0)
    with pytest.raises(ValueError, match="`rate` must be provided"):
        fl.nn.dropout(p)
    with pytest.raises(ValueError, match="Cannot specify both 'rate' and 'keep_prob'"):
        fl.nn.dropout(p, keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="`keep_prob` must be a floating point number or Tensor"):
        fl.nn.dropout(p, keep_prob="a")
    with pytest.raises(ValueError, match="`x.dtype` must be a floating point tensor"):
        fl.nn.dropout(fl.constant([1, 2]), rate=0.5)
    with pytest.raises(ValueError, match="must have rank 0"):
        fl.nn.dropout(p, rate=fl.constant([0.5]))
    with pytest.raises(ValueError, match="`x.dtype` must be compatible with `rate.dtype`"):
        fl.nn.dropout(p, rate=fl.constant(0.5, fl.float64))


# --- graph structure ----------------------------------------------------------------
STRUCTURE = {
    "softmax_axis0": lambda tf: tf.nn.softmax(tf.zeros([2, 3, 4]), axis=0),
    "log_softmax_axis-2": lambda tf: tf.nn.log_softmax(tf.zeros([2, 3, 4]), axis=-2),
    "xent_v1": lambda tf: tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([2, 3]), logits=tf.zeros([2, 3])),
    "xent_v2_3d": lambda tf: tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.zeros([2, 3, 4]),
                                                                        logits=tf.zeros([2, 3, 4])),
    "sparse_3d": lambda tf: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([2, 3], tf.int32),
                                                                          logits=tf.zeros([2, 3, 4])),
    "sigmoid": lambda tf: tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2]), logits=tf.ones([2])),
    "weighted": lambda tf: tf.nn.weighted_cross_entropy_with_logits(tf.zeros([2]), tf.ones([2]), 2.0),
    "moments": lambda tf: tf.nn.moments(tf.zeros([2, 3]), [0]),
    "batchnorm": lambda tf: tf.nn.batch_normalization(tf.zeros([2, 3]), tf.zeros([3]), tf.ones([3]),
                                                      tf.zeros([3]), tf.ones([3]), 1e-3),
    "dropout": lambda tf: tf.nn.dropout(tf.zeros([2, 3]), keep_prob=0.5),
    "l2_normalize": lambda tf: tf.nn.l2_normalize(tf.zeros([2, 3]), 1),
    "xw_plus_b": lambda tf: tf.nn.xw_plus_b(tf.zeros([2, 3]), tf.zeros([3, 4]), tf.zeros([4])),
    "crelu": lambda tf: tf.nn.crelu(tf.zeros([2, 3])),
}


@pytest.mark.parametrize("name", sorted(STRUCTURE))
def test_builds_the_same_ops_as_tensorflow(tf1, name):
    """Same op types, as many: the op count seeds random ops created later under a
    graph-level seed, so a loss built with fewer ops would change later random draws."""
    types = []
    for mod in (tf1, fl):
        g = mod.Graph()
        with g.as_default():
            STRUCTURE[name](mod)
        types.append(sorted(op.type for op in g.get_operations()))
    assert types[1] == types[0]
