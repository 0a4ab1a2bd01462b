"""tf.contrib.layers: the initializers against the TensorFlow initializers they equal
(same seeds, same values), the regularizers' values and errors, fully_connected and
flatten against NumPy, with TensorFlow 1.15's variable names and collections."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

L = fl.contrib.layers


def _init_value(tf, init, shape):
    with tf.Graph().as_default():
        v = tf.get_variable("v", shape, initializer=init)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return s.run(v)


@pytest.mark.parametrize("shape", [[4, 6], [3, 3, 2, 5], [7]])
def test_xavier_uniform_is_glorot_uniform(tf1, shape):
    got = _init_value(fl, L.xavier_initializer(seed=3), shape)
    expected = _init_value(tf1, tf1.glorot_uniform_initializer(seed=3), shape)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mode,n", [("FAN_IN", 3 * 3 * 2), ("FAN_OUT", 3 * 3 * 5), ("FAN_AVG", 3 * 3 * 3.5)])
def test_variance_scaling_truncated_normal(tf1, mode, n):
    shape = [3, 3, 2, 5]
    got = _init_value(fl, L.variance_scaling_initializer(2.0, mode, seed=5), shape)
    expected = _init_value(tf1, tf1.truncated_normal_initializer(stddev=math.sqrt(1.3 * 2.0 / n), seed=5), shape)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_variance_scaling_uniform_and_errors(tf1):
    got = _init_value(fl, L.variance_scaling_initializer(1.0, "FAN_IN", uniform=True, seed=2), [10, 4])
    limit = math.sqrt(3.0 / 10)
    expected = _init_value(tf1, tf1.random_uniform_initializer(-limit, limit, seed=2), [10, 4])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    with pytest.raises(TypeError, match="Unknown mode FAN_X"):
        L.variance_scaling_initializer(mode="FAN_X")
    with pytest.raises(TypeError, match="non-floating point type"):
        L.xavier_initializer(dtype=fl.int32)


def test_l1_l2_regularizers(tf1):
    w = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)

    def build(tf):
        t = tf.constant(w)
        if tf is fl:
            l1, l2, both = L.l1_regularizer(0.1), L.l2_regularizer(0.5), L.l1_l2_regularizer(0.1, 0.5)
            return [l1(t), l2(t), both(t)]
        return [0.1 * tf.reduce_sum(tf.abs(t)), 0.5 * tf.nn.l2_loss(t),
                tf.add_n([0.1 * tf.reduce_sum(tf.abs(t)), 0.5 * tf.nn.l2_loss(t)])]

    assert_same(tf1, build)
    t = fl.constant(w)
    assert L.l2_regularizer(0.5)(t).op.name == "l2_regularizer"
    assert L.l2_regularizer(0.0)(t) is None
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        L.l2_regularizer(1)
    with pytest.raises(ValueError, match="Setting a scale less than 0 on a regularizer: -0.5"):
        L.l1_regularizer(-0.5)


def test_fully_connected_names_values_and_regularization():
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    y = L.fully_connected(fl.constant(x), 5, weights_regularizer=L.l2_regularizer(0.1))
    z = L.fully_connected(y, 2, activation_fn=None, scope="logits")
    names = [v.op.name for v in fl.global_variables()]
    assert names == ["fully_connected/weights", "fully_connected/biases", "logits/weights", "logits/biases"]
    assert [v.op.name for v in fl.get_collection(fl.GraphKeys.MODEL_VARIABLES)] == names
    assert [v.op.name for v in fl.trainable_variables()] == names
    assert y.shape.as_list() == [3, 5] and z.shape.as_list() == [3, 2]
    reg = fl.get_collection(fl.GraphKeys.REGULARIZATION_LOSSES)
    assert len(reg) == 1
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        w, b, w2, b2, yv, zv, rv = s.run([*fl.global_variables(), y, z, reg[0]])
    np.testing.assert_allclose(yv, np.maximum(x @ w + b, 0), rtol=1e-5)
    np.testing.assert_allclose(zv, yv @ w2 + b2, rtol=1e-5)
    np.testing.assert_allclose(rv, 0.1 * np.sum(w * w) / 2, rtol=1e-5)
    assert np.all(b == 0) and np.abs(w).max() <= math.sqrt(6.0 / 9)


def test_fully_connected_rank3_reuse_and_no_biases():
    x = fl.placeholder(fl.float32, [None, 7, 4])
    y = L.fully_connected(x, 3, biases_initializer=None, scope="fc")
    y2 = L.fully_connected(x, 3, biases_initializer=None, scope="fc", reuse=True)
    assert y.shape.as_list() == [None, 7, 3]
    assert [v.op.name for v in fl.global_variables()] == ["fc/weights"]
    xv = np.random.RandomState(1).randn(2, 7, 4).astype(np.float32)
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        yv, y2v, w = s.run([y, y2, fl.global_variables()[0]], {x: xv})
    np.testing.assert_allclose(yv, np.maximum(xv @ w, 0), rtol=1e-5)
    np.testing.assert_array_equal(yv, y2v)
    with pytest.raises(ValueError, match="num_outputs type should be"):
        L.fully_connected(x, 2.0)


def test_flatten():
    x = fl.placeholder(fl.float32, [None, 2, 3])
    y = L.flatten(x)
    assert y.shape.as_list() == [None, 6] and y.op.name.startswith("Flatten/")
    with fl.Session() as s:
        out = s.run(y, {x: np.arange(12, dtype=np.float32).reshape(2, 2, 3)})
    np.testing.assert_array_equal(out, np.arange(12).reshape(2, 6))


def test_contrib_rnn_and_layers_names():
    assert fl.contrib.layers.xavier_initializer_conv2d is fl.contrib.layers.xavier_initializer
    for n in ("BasicLSTMCell", "BasicRNNCell", "GRUCell", "LSTMCell", "MultiRNNCell", "DropoutWrapper",
              "LSTMStateTuple", "static_rnn", "static_bidirectional_rnn", "stack_bidirectional_rnn",
              "stack_bidirectional_dynamic_rnn"):
        assert hasattr(fl.contrib.rnn, n)


def _tf_reference(tf1, fn):
    with tf1.Graph().as_default():
        out = fn()
        with tf1.Session() as s:
            return s.run(out)


@pytest.mark.parametrize("stride,padding,rate", [(1, "SAME", 1), (2, "VALID", 1), ([1, 2], "same", 1),
                                                 (1, "SAME", 2)])
def test_conv2d_against_tensorflow_conv(tf1, stride, padding, rate):
    x = np.random.RandomState(2).randn(2, 7, 6, 3).astype(np.float32)
    y = L.conv2d(fl.constant(x), 4, [3, 3], stride=stride, padding=padding, rate=rate,
                 biases_initializer=fl.constant_initializer(0.25))
    assert [v.op.name for v in fl.global_variables()] == ["Conv/weights", "Conv/biases"]
    assert y.op.type == "Relu" and y.op.name == "Conv/Relu"
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        got, w = s.run([y, fl.global_variables()[0]])
    st = [stride] * 2 if isinstance(stride, int) else stride
    expected = _tf_reference(tf1, lambda: tf1.nn.relu(tf1.nn.conv2d(
        x, w, strides=[1, *st, 1], padding=padding.upper(), dilations=[1, rate, rate, 1]) + 0.25))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert y.shape.as_list() == list(expected.shape)


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
def test_pool2d_against_tensorflow(tf1, kind):
    x = np.random.RandomState(3).randn(1, 6, 5, 2).astype(np.float32)
    y = getattr(L, kind)(fl.constant(x), [2, 2])
    y3 = getattr(L, kind)(fl.constant(x), 3, stride=1, padding="SAME")
    with fl.Session() as s:
        got, got3 = s.run([y, y3])
    ref = tf1.nn.max_pool if kind == "max_pool2d" else tf1.nn.avg_pool
    np.testing.assert_allclose(got, _tf_reference(tf1, lambda: ref(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")),
                               rtol=1e-6)
    np.testing.assert_allclose(got3, _tf_reference(tf1, lambda: ref(x, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")),
                               rtol=1e-6)
    assert y.op.name.startswith("MaxPool2D/" if kind == "max_pool2d" else "AvgPool2D/")


def test_dropout_training_and_inference():
    x = fl.ones([200, 50])
    train = L.dropout(x, keep_prob=0.8)
    infer = L.dropout(x, keep_prob=0.8, is_training=False)
    with fl.Session() as s:
        t, i = s.run([train, infer])
    np.testing.assert_array_equal(i, np.ones([200, 50]))
    kept = t != 0
    assert abs(kept.mean() - 0.8) < 0.02 and np.allclose(t[kept], 1 / 0.8)


@pytest.mark.parametrize("shape,fmt", [([4, 3, 3, 2], "NHWC"), ([4, 2, 3, 3], "NCHW"), ([5, 3], "NHWC")])
@pytest.mark.parametrize("updates", ["collection", "forced"])
def test_batch_norm_is_layers_batch_normalization(shape, fmt, updates):
    """contrib's batch_norm is tf.layers.batch_normalization (itself tested against
    TensorFlow in tests/ops/test_batch_norm.py) with contrib's defaults -- decay 0.999,
    epsilon 0.001, no gamma -- in scope "BatchNorm"; TensorFlow 2.21 has neither
    contrib nor a working tf.layers.batch_normalization (Keras 3) to run instead."""
    x = np.random.RandomState(6).randn(*shape).astype(np.float32)
    axes = tuple(i for i in range(len(shape)) if i != (1 if fmt == "NCHW" else len(shape) - 1))
    results = []
    for contrib in (True, False):
        with fl.Graph().as_default():
            inp = fl.constant(x)
            if contrib:
                y = L.batch_norm(inp, decay=0.9, data_format=fmt, activation_fn=fl.nn.relu,
                                 updates_collections=None if updates == "forced" else fl.GraphKeys.UPDATE_OPS)
            else:
                y = fl.nn.relu(fl.layers.batch_normalization(inp, axis=1 if fmt == "NCHW" else -1, momentum=0.9,
                                                             epsilon=0.001, scale=False, training=True,
                                                             name="BatchNorm"))
            ups = fl.get_collection(fl.GraphKeys.UPDATE_OPS)
            if contrib and updates == "forced":
                assert ups == []
            names = [v.op.name for v in fl.global_variables()]
            with fl.Session() as s:
                s.run(fl.global_variables_initializer())
                out = s.run([y, ups])[0]
                moving = s.run([v for v in fl.global_variables() if "moving" in v.op.name])
            results.append((names, out, moving))
    assert results[0][0] == results[1][0] == ["BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance"]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-6)
    for a, b in zip(results[0][2], results[1][2]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    np.testing.assert_allclose(results[0][1], np.maximum((x - mean) / np.sqrt(var + 0.001), 0), rtol=1e-3,
                               atol=1e-4)
    np.testing.assert_allclose(results[0][2][0], 0.1 * mean.reshape(-1), rtol=1e-4, atol=1e-6)


def test_batch_norm_scopes_and_inference():
    x = fl.constant(np.random.RandomState(7).randn(6, 4).astype(np.float32))
    L.batch_norm(x, scale=True)
    y = L.batch_norm(x, is_training=False, scope="bn2")
    assert [v.op.name for v in fl.global_variables()] == [
        "BatchNorm/gamma", "BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance",
        "bn2/beta", "bn2/moving_mean", "bn2/moving_variance"]
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        xv, yv = s.run([x, y])
    np.testing.assert_allclose(yv, xv / np.sqrt(1 + 0.001), rtol=1e-5)
    with pytest.raises(ValueError, match="renorm"):
        L.batch_norm(x, renorm=True)
