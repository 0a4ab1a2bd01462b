"""Batch normalization: FusedBatchNormV3 / FusedBatchNormGradV3 against TensorFlow and
NumPy, tf.layers.batch_normalization (variables, UPDATE_OPS, training steps of a small
conv net), and the gradient-check TABLE entries.

TensorFlow 2.21's `tf.compat.v1.layers` is gone with Keras 3, so the layer's reference is
built from what TensorFlow's layer is made of: get_variable under the layer's scope, the
fused op (or moments + batch_normalization) and `assign_sub` moving-average updates.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(5)
X4 = RS.randn(3, 4, 5, 2).astype(np.float32) * 2 + 1


def _np_bn(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, ...]:
    x64 = x.astype(np.float64)
    m = x64.mean(axes, keepdims=True)
    v = x64.var(axes, keepdims=True)
    return (x64 - m) / np.sqrt(v + eps), m.ravel(), v.ravel()


# --- the op ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_training_against_numpy(fmt: str) -> None:
    x = X4 if fmt == "NHWC" else X4.transpose(0, 3, 1, 2)
    axes = (0, 1, 2) if fmt == "NHWC" else (0, 2, 3)
    with fl.Graph().as_default():
        y, m, v = fl.nn.fused_batch_norm(x, fl.ones([2]), fl.zeros([2]), data_format=fmt, epsilon=1e-3)
        with fl.Session() as s:
            yv, mv, vv = s.run([y, m, v])
    ref, rm, rv = _np_bn(x, axes, 1e-3)
    n = x.size / 2
    np.testing.assert_allclose(yv, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mv, rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vv, rv * n / (n - 1), rtol=1e-5)  # Bessel-corrected
    assert yv.dtype == np.float32 and vv.dtype == np.float32


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("factor", [1.0, 0.25])
def test_fused_training_matches_tf(tf1: Any, fmt: str, factor: float) -> None:
    x = X4 if fmt == "NHWC" else X4.transpose(0, 3, 1, 2)

    def build(tf: Any) -> Any:
        op = tf.nn.fused_batch_norm(x, tf.constant([1.5, 0.5]), tf.constant([0.1, -0.2]),
                                    mean=tf.constant([0.3, 0.4]), variance=tf.constant([2.0, 0.5]),
                                    data_format=fmt, exponential_avg_factor=factor)[0].op
        assert op.type == "FusedBatchNormV3" and op.name == "FusedBatchNormV3"
        return list(op.outputs[:5])

    assert_same(tf1, build, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_inference_matches_tf(tf1: Any, fmt: str) -> None:
    x = X4 if fmt == "NHWC" else X4.transpose(0, 3, 1, 2)

    def build(tf: Any) -> Any:
        xp = tf.placeholder(tf.float32, x.shape)  # a constant input would be folded away by TF
        # only y: TF's grappler rewrites an inference batch norm into Mul/Add
        return tf.nn.fused_batch_norm(xp, [1.5, 0.5], [0.1, -0.2], mean=[0.3, 0.4],
                                      variance=[2.0, 0.5], data_format=fmt,
                                      is_training=False, epsilon=1e-6)[0], {xp: x}

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_fused_float16_matches_tf(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return list(tf.nn.fused_batch_norm(X4.astype(np.float16), tf.ones([2]), tf.zeros([2])))

    assert_same(tf1, build, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_fused_gradient_matches_tf(tf1: Any, training: bool, fmt: str) -> None:
    x = X4 if fmt == "NHWC" else X4.transpose(0, 3, 1, 2)
    w = RS.randn(*x.shape).astype(np.float32)

    def build(tf: Any) -> Any:
        xt, sc, of = tf.constant(x), tf.constant([1.5, 0.5]), tf.constant([0.1, -0.2])
        kw = {} if training else {"mean": tf.constant([0.3, 0.4]), "variance": tf.constant([2.0, 0.5])}
        y = tf.nn.fused_batch_norm(xt, sc, of, data_format=fmt, is_training=training, **kw)[0]
        gs = tf.gradients(tf.reduce_sum(y * w), [xt, sc, of])
        expect = "Transpose" if fmt == "NCHW" and not training else "FusedBatchNormGradV3"
        assert gs[0].op.type == expect
        return gs

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_fused_empty_batch_matches_tf(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [None, 2, 2, 3])
        y, m, v = tf.nn.fused_batch_norm(x, tf.ones([3]), tf.zeros([3]))
        return [y, m, v], {x: np.zeros((0, 2, 2, 3), np.float32)}  # statistics are nan

    assert_same(tf1, build)


def test_build_errors() -> None:
    with fl.Graph().as_default():
        with pytest.raises(ValueError, match="rank 4 but is rank 3.*FusedBatchNormV3"):
            fl.nn.fused_batch_norm(fl.zeros([2, 3, 4]), fl.ones([4]), fl.zeros([4]))
        with pytest.raises(ValueError, match="Dimensions must be equal.*FusedBatchNormV3"):
            fl.nn.fused_batch_norm(fl.zeros([2, 3, 3, 4]), fl.ones([3]), fl.zeros([3]))
        with pytest.raises(ValueError, match="mean"):
            fl.nn.fused_batch_norm(fl.zeros([2, 3, 3, 4]), fl.ones([4]), is_training=False)


def test_runtime_error_on_wrong_channels() -> None:
    with fl.Graph().as_default():
        x = fl.placeholder(fl.float32)
        y = fl.nn.fused_batch_norm(x, fl.ones([4]), fl.zeros([4]))[0]
        with fl.Session() as s, pytest.raises(fl.errors.InvalidArgumentError, match="scale"):
            s.run(y, {x: np.zeros((1, 2, 2, 3), np.float32)})


# --- gradient TABLE entries (float64: flowlab accepts it, TensorFlow's op does not) ----
@grad_case("FusedBatchNormV3", RS.randn(2, 3, 2, 3), RS.rand(3) + 0.5, RS.randn(3), rtol=1e-4, atol=1e-5)
def _(tf: Any, x: Any, scale: Any, offset: Any) -> Any:
    return tf.nn.fused_batch_norm(x, scale, offset)[0]


@grad_case("FusedBatchNormV3", RS.randn(2, 3, 2, 2), RS.rand(3) + 0.5, RS.randn(3), rtol=1e-4, atol=1e-5)
def _(tf: Any, x: Any, scale: Any, offset: Any) -> Any:
    return tf.nn.fused_batch_norm(x, scale, offset, mean=tf.constant([0.1, 0.2, 0.3], tf.float64),
                                  variance=tf.constant([1.0, 2.0, 0.5], tf.float64),
                                  data_format="NCHW", is_training=False)[0]


# --- the layer ------------------------------------------------------------------------
def _tf_layer(tf: Any, x: Any, training: bool, momentum: float = 0.99, eps: float = 1e-3,
              fused: bool = True, name: str = "batch_normalization") -> Any:
    """TensorFlow 1.x's batch_normalization layer, spelled out with primitives."""
    c = x.shape.as_list()[-1]
    with tf.variable_scope(name):
        gamma = tf.get_variable("gamma", [c], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [c], initializer=tf.zeros_initializer())
        mm = tf.get_variable("moving_mean", [c], initializer=tf.zeros_initializer(), trainable=False)
        mv = tf.get_variable("moving_variance", [c], initializer=tf.ones_initializer(), trainable=False)
        if fused:
            y, m, v = tf.nn.fused_batch_norm(x, gamma, beta, *(() if training else (mm, mv)),
                                             epsilon=eps, is_training=training)
        else:
            m, v = tf.nn.moments(x, list(range(x.shape.ndims - 1))) if training else (mm, mv)
            y = tf.nn.batch_normalization(x, m, v, beta, gamma, eps)
        if training:
            for var, val in ((mm, m), (mv, v)):
                upd = tf.assign_sub(var, (var - val) * tf.constant(1.0 - momentum))
                tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, upd)
    return y


def test_layer_variables_and_update_ops() -> None:
    with fl.Graph().as_default():
        x = fl.placeholder(fl.float32, [None, 4, 4, 3])
        y = fl.layers.batch_normalization(x, training=True)
        fl.layers.batch_normalization(x, training=False, center=False)
        names = [v.op.name for v in fl.global_variables()]
        assert names == ["batch_normalization/gamma", "batch_normalization/beta",
                         "batch_normalization/moving_mean", "batch_normalization/moving_variance",
                         "batch_normalization_1/gamma", "batch_normalization_1/moving_mean",
                         "batch_normalization_1/moving_variance"]
        assert [v.op.name for v in fl.trainable_variables()] == [
            "batch_normalization/gamma", "batch_normalization/beta", "batch_normalization_1/gamma"]
        ups = fl.get_collection(fl.GraphKeys.UPDATE_OPS)
        assert [u.op.name for u in ups] == ["batch_normalization/AssignMovingAvg",
                                            "batch_normalization/AssignMovingAvg_1"]
        assert y.op.type == "FusedBatchNormV3" and y.dtype == fl.float32


@pytest.mark.parametrize("fused", [True, False])
def test_layer_matches_tf_primitives(tf1: Any, fused: bool) -> None:
    x = X4 if fused else X4.reshape(-1, 2)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        if tf is fl:
            y = fl.layers.batch_normalization(xt, training=True, momentum=0.9)
        else:
            y = _tf_layer(tf, xt, True, momentum=0.9, fused=fused)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            after = [tf.identity(y)]
        stats = [v for v in tf.global_variables() if "moving" in v.op.name]
        return after, [tf.identity(s) for s in stats]

    def run(mod: Any) -> Any:
        with mod.Graph().as_default():
            after, stats = build(mod)
            with mod.Session() as s:
                s.run(mod.global_variables_initializer())
                yv = s.run(after)
                return yv, s.run(stats)

    ey, es = run(tf1)
    ay, as_ = run(fl)
    np.testing.assert_allclose(ay[0], ey[0], rtol=1e-5, atol=1e-5)
    for e, a in zip(es, as_):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
        assert a.dtype == e.dtype


def test_layer_inference_and_tensor_training() -> None:
    with fl.Graph().as_default():
        x = fl.constant(X4)
        flag = fl.placeholder(fl.bool, [])
        y = fl.layers.batch_normalization(x, training=flag, momentum=0.5)
        ups = fl.get_collection(fl.GraphKeys.UPDATE_OPS)
        mm = fl.global_variables()[2]
        with fl.Session() as s:
            s.run(fl.global_variables_initializer())
            yi, _ = s.run([y, ups], {flag: False})
            np.testing.assert_allclose(yi, X4 / np.sqrt(1 + 1e-3), rtol=1e-5)
            np.testing.assert_allclose(s.run(mm), 0.0)  # no update when not training
            yt, _ = s.run([y, ups], {flag: True})
            np.testing.assert_allclose(yt, _np_bn(X4, (0, 1, 2), 1e-3)[0], rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(s.run(mm), 0.5 * X4.mean((0, 1, 2)), rtol=1e-5)


def test_conv_net_training_steps_match_tf(tf1: Any) -> None:
    """A few SGD steps of conv -> batch norm -> relu -> dense, with UPDATE_OPS."""
    data = RS.randn(8, 6, 6, 2).astype(np.float32)
    labels = RS.randint(0, 3, size=8)
    k0 = (RS.randn(3, 3, 2, 4) * 0.3).astype(np.float32)
    w0 = (RS.randn(144, 3) * 0.1).astype(np.float32)

    def run(tf: Any) -> Any:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, 6, 6, 2])
            k = tf.Variable(k0, name="k")
            h = tf.nn.conv2d(x, k, [1, 1, 1, 1], "SAME")
            if tf is fl:
                h = fl.layers.batch_normalization(h, training=True, momentum=0.8)
            else:
                h = _tf_layer(tf, h, True, momentum=0.8)
            h = tf.nn.relu(h)
            w = tf.Variable(w0, name="w")
            logits = tf.matmul(tf.reshape(h, [-1, 144]), w)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
            with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
                train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            stats = [v for v in tf.global_variables() if "batch_normalization" in v.op.name]
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                losses = [s.run([loss, train], {x: data})[0] for _ in range(4)]
                return losses, s.run(stats)

    el, es = run(tf1)
    al, as_ = run(fl)
    np.testing.assert_allclose(al, el, rtol=1e-4)
    assert len(es) == len(as_) == 4
    for e, a in zip(es, as_):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)
