"""flowlab.layers (tf.layers): variable and op names, values with seeded initializers.

TensorFlow 2.21 ships Keras 3, whose `tf.compat.v1.layers` is gone; the differential
tests therefore build TensorFlow's reference from what a TF1 layer is made of
(get_variable under the layer's variable scope, then the ops), and check that a
flowlab layer gives the same variables and outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab import layers
from tests.difftest import assert_same

RS = np.random.RandomState(11)


def _init_run(fetches: Any, feed: dict | None = None) -> Any:
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        return s.run(fetches, feed)


def test_names_follow_tensorflow() -> None:
    with fl.Graph().as_default():
        x = fl.placeholder(fl.float32, [None, 8, 8, 3])
        c = layers.conv2d(x, 4, 3, padding="same", activation=fl.nn.relu)
        p = layers.max_pooling2d(c, 2, 2)
        a = layers.average_pooling2d(c, 2, 2)
        f = layers.flatten(p)
        d = layers.dense(f, 5)
        d2 = layers.dense(d, 2, activation=fl.nn.relu, name="logits")
        d3 = layers.dense(d2, 2, use_bias=False)
        names = [t.op.name for t in (c, p, a, f, d, d2, d3)]
        assert names == ["conv2d/Relu", "max_pooling2d/MaxPool", "average_pooling2d/AvgPool",
                         "flatten/Reshape", "dense/BiasAdd", "logits/Relu", "dense_1/MatMul"]
        assert [v.name for v in fl.global_variables()] == [
            "conv2d/kernel:0", "conv2d/bias:0", "dense/kernel:0", "dense/bias:0",
            "logits/kernel:0", "logits/bias:0", "dense_1/kernel:0"]
        assert fl.get_default_graph().get_operation_by_name("conv2d/Conv2D").type == "Conv2D"
        assert [s.as_list() for s in (c.shape, p.shape, f.shape, d.shape)] == [
            [None, 8, 8, 4], [None, 4, 4, 4], [None, 64], [None, 5]]
        assert len(fl.trainable_variables()) == 7


def test_reuse_shares_variables() -> None:
    with fl.Graph().as_default():
        x = fl.constant(RS.randn(2, 3).astype(np.float32))
        y1 = layers.dense(x, 4, name="shared")
        y2 = layers.dense(x, 4, name="shared", reuse=True)
        assert len(fl.global_variables()) == 2
        with pytest.raises(ValueError, match="shared/kernel already exists"):
            layers.dense(x, 4, name="shared")
        v1, v2 = _init_run([y1, y2])
        np.testing.assert_array_equal(v1, v2)


def test_default_initializers() -> None:
    with fl.Graph().as_default():
        x = fl.constant(np.ones((1, 30), np.float32))
        layers.dense(x, 20)
        k, b = _init_run(fl.global_variables())
        limit = np.sqrt(6.0 / (30 + 20))  # glorot uniform
        assert k.shape == (30, 20) and np.abs(k).max() <= limit and np.abs(k).max() > limit / 2
        np.testing.assert_array_equal(b, np.zeros(20, np.float32))


def _tf1_dense(tf: Any, x: Any, units: int, scope: str, seed: int, activation: Any = None) -> Any:
    """What tf.layers.dense is made of (the TensorFlow side of the differential test)."""
    if tf is fl:
        return layers.dense(x, units, activation=activation, name=scope,
                            kernel_initializer=tf.glorot_uniform_initializer(seed=seed),
                            bias_initializer=tf.random_normal_initializer(seed=seed + 1))
    with tf.variable_scope(scope):
        k = tf.get_variable("kernel", [x.shape[-1], units],
                            initializer=tf.glorot_uniform_initializer(seed=seed))
        b = tf.get_variable("bias", [units], initializer=tf.random_normal_initializer(seed=seed + 1))
        y = tf.nn.bias_add(tf.matmul(x, k), b)
        return activation(y) if activation is not None else y


def _tf1_conv(tf: Any, x: Any, filters: int, k: int, strides: int, padding: str, seed: int) -> Any:
    if tf is fl:
        return layers.conv2d(x, filters, k, strides, padding, activation=tf.nn.relu,
                             kernel_initializer=tf.glorot_uniform_initializer(seed=seed),
                             bias_initializer=tf.constant_initializer(0.1))
    with tf.variable_scope("conv2d"):
        w = tf.get_variable("kernel", [k, k, x.shape[-1], filters],
                            initializer=tf.glorot_uniform_initializer(seed=seed))
        b = tf.get_variable("bias", [filters], initializer=tf.constant_initializer(0.1))
        y = tf.nn.conv2d(x, w, strides, padding.upper())
        return tf.nn.relu(tf.nn.bias_add(y, b))


def test_small_cnn_matches_tensorflow(tf1: Any) -> None:
    img = RS.rand(3, 9, 9, 2).astype(np.float32)

    def build(tf: Any) -> Any:
        tf.set_random_seed(42)
        x = tf.placeholder(tf.float32, [None, 9, 9, 2])
        c = _tf1_conv(tf, x, 4, 3, 1, "same", seed=1)
        if tf is fl:
            p = layers.max_pooling2d(c, 2, 2)
            f = layers.flatten(p)
        else:
            p = tf.nn.max_pool(c, 2, 2, "VALID")
            f = tf.reshape(p, [-1, 64])
        h = _tf1_dense(tf, f, 6, "dense", seed=3, activation=tf.nn.relu)
        logits = _tf1_dense(tf, h, 3, "dense_1", seed=5)
        variables = sorted(tf.global_variables(), key=lambda v: v.name)
        names = tf.constant([v.name for v in variables])
        return [logits, names] + variables, {x: img}

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_dense_rank3_and_float64() -> None:
    x = RS.randn(2, 3, 4)
    with fl.Graph().as_default():
        y = layers.dense(x, 5, kernel_initializer=fl.glorot_uniform_initializer(seed=1))
        assert y.dtype == fl.float64 and y.shape.as_list() == [2, 3, 5]
        yv, k, b = _init_run([y] + fl.global_variables())
    assert k.dtype == np.float64
    np.testing.assert_allclose(yv, x @ k + b, rtol=1e-12)


def test_dropout() -> None:
    x = np.ones((200, 50), np.float32)
    with fl.Graph().as_default():
        off = layers.dropout(x, 0.4)
        on = layers.dropout(x, 0.4, training=True, seed=3)
        flag = fl.placeholder(fl.bool, [])
        sw = layers.dropout(x, 0.4, training=flag, seed=3)
        assert off.op.type == "Identity" and off.op.name == "dropout/Identity"
        with fl.Session() as s:
            vo, vn = s.run([off, on])
            vs_off = s.run(sw, {flag: False})
            vs_on = s.run(sw, {flag: True})
    np.testing.assert_array_equal(vo, x)
    np.testing.assert_array_equal(vs_off, x)
    for v in (vn, vs_on):
        assert set(np.unique(v)) <= {0.0, np.float32(1 / 0.6)}
        assert 0.3 < (v == 0).mean() < 0.5


def test_regularizers_join_the_collection() -> None:
    with fl.Graph().as_default():
        x = fl.constant(np.ones((2, 3), np.float32))
        layers.dense(x, 2, kernel_regularizer=fl.nn.l2_loss, name="r",
                     kernel_initializer=fl.ones_initializer())
        layers.dense(x, 2, name="r", reuse=True, kernel_regularizer=fl.nn.l2_loss)
        reg = fl.get_collection(fl.GraphKeys.REGULARIZATION_LOSSES)
        assert [t.op.name for t in reg] == ["r/kernel/Regularizer/L2Loss"]
        assert _init_run(reg[0]) == pytest.approx(3.0)


def test_flatten_shapes() -> None:
    with fl.Graph().as_default():
        a = layers.flatten(fl.placeholder(fl.float32, [None, 2, 3, 4]))
        b = layers.flatten(fl.placeholder(fl.float32, [5, None, 3]))
        c = layers.flatten(fl.placeholder(fl.float32, [None, 2, 3]), data_format="channels_first")
        assert a.shape.as_list() == [None, 24]
        assert b.shape.as_list()[0] in (5, None)
        v = _init_run(c, {c.op.inputs[0].op.inputs[0]: np.arange(6.0).reshape(1, 2, 3)})
        np.testing.assert_array_equal(v, [[0, 3, 1, 4, 2, 5]])


def test_errors() -> None:
    with fl.Graph().as_default():
        with pytest.raises(ValueError, match="last dimension of the inputs"):
            layers.dense(fl.placeholder(fl.float32, [2, None]), 3)
        with pytest.raises(ValueError, match="expected min_ndim=4"):
            layers.conv2d(fl.placeholder(fl.float32, [2, 3, 3]), 3, 2)
        with pytest.raises(ValueError, match="padding"):
            layers.conv2d(fl.placeholder(fl.float32, [2, 3, 3, 1]), 3, 2, padding="full")
        with pytest.raises(ValueError, match="data_format"):
            layers.max_pooling2d(fl.placeholder(fl.float32, [2, 3, 3, 1]), 2, 2, data_format="NHWC")


@pytest.mark.parametrize("padding,strides,kernel", [("valid", 2, 3), ("same", 2, 3), ("valid", 1, 2),
                                                     ("same", (2, 1), (3, 2))])
def test_conv2d_transpose_layer_matches_tensorflow(tf1: Any, padding: str, strides: Any, kernel: Any) -> None:
    """tf.layers.conv2d_transpose (Keras' Conv2DTranspose, legacy TF layer) with an
    unknown batch and height: values, the static shape, and the variables' names."""
    from tests.programs.hidden_support import tf_with_legacy_keras

    img = RS.rand(2, 5, 4, 2).astype(np.float32)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    init = RS.randn(kh, kw, 3, 2).astype(np.float32) * 0.3

    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [None, None, 4, 2])
        y = tf.layers.conv2d_transpose(x, 3, kernel, strides=strides, padding=padding,
                                       activation=tf.nn.relu, kernel_initializer=tf.constant_initializer(init))
        names = tf.constant([v.name for v in tf.global_variables()])
        return [y, names, tf.constant(str(y.shape.as_list()))], {x: img}

    from tensorflow.python.keras.legacy_tf_layers import convolutional  # type: ignore[import-not-found]

    shim = tf_with_legacy_keras(tf1)
    shim.layers.conv2d_transpose = convolutional.conv2d_transpose
    assert_same(shim, build, rtol=1e-5, atol=1e-5)
