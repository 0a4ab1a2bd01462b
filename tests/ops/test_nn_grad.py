"""Gradients of the nn ops: finite-difference TABLE entries (checked by the registry
walk in test_gradients.py), the fused backward kernels against NumPy, and
differential tests of training-style expressions against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops import nn_grad, nn_ops  # noqa: F401 - nn_grad declares the fused backward ops
from flowlab.ops.builder import apply_op
from flowlab.ops.gradients_impl import gradients
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(3)
X = np.array([[0.3, -1.2, 0.7, 6.5], [1.6, -0.4, 2.1, -2.5]])  # away from kinks (0 and 6)
G = np.array([[1.1, 0.45, -0.8, 0.3], [-1.3, 0.9, 0.6, 1.7]])
LOGITS = RS.randn(3, 4)
LABELS = np.array([[0.1, 0.2, 0.3, 0.4], [0.0, 1.0, 0.0, 0.0], [0.25, 0.25, 0.5, 0.0]])

for _op, _fn in [("Relu", nn_ops.relu), ("Relu6", nn_ops.relu6), ("Elu", nn_ops.elu),
                 ("Selu", nn_ops.selu), ("Softplus", nn_ops.softplus), ("Softsign", nn_ops.softsign),
                 ("Softmax", nn_ops.softmax), ("LogSoftmax", nn_ops.log_softmax),
                 ("L2Loss", nn_ops.l2_loss)]:
    grad_case(_op, X)(lambda tf, x, _fn=_fn: _fn(x))
grad_case("LeakyRelu", X)(lambda tf, x: nn_ops.leaky_relu(x, alpha=0.3))
grad_case("Softmax", RS.randn(2, 3, 2))(lambda tf, x: nn_ops.softmax(x, axis=1))

for _op, _second in [("ReluGrad", X), ("Relu6Grad", X), ("EluGrad", X), ("SeluGrad", X),
                     ("SoftplusGrad", X), ("SoftsignGrad", X)]:
    grad_case(_op, G, _second)(lambda tf, g, f, _op=_op: apply_op(_op, name=_op, gradients=g, **{
        "features" if _op not in ("EluGrad", "SeluGrad") else "outputs": f}))
grad_case("LeakyReluGrad", G, X)(
    lambda tf, g, f: apply_op("LeakyReluGrad", name="LeakyReluGrad", gradients=g, features=f, alpha=0.1))

grad_case("BiasAdd", RS.randn(2, 3, 4), RS.randn(4))(lambda tf, x, b: nn_ops.bias_add(x, b))
grad_case("BiasAdd", RS.randn(2, 3, 2, 2), RS.randn(3))(
    lambda tf, x, b: nn_ops.bias_add(x, b, data_format="NCHW"))
grad_case("BiasAddGrad", RS.randn(2, 3, 4))(
    lambda tf, g: apply_op("BiasAddGrad", out_backprop=g, name="BiasAddGrad"))
grad_case("BiasAddGrad", RS.randn(2, 3, 2))(
    lambda tf, g: apply_op("BiasAddGrad", out_backprop=g, data_format="NCHW", name="BiasAddGrad"))

grad_case("SoftmaxCrossEntropyWithLogits", LOGITS, LABELS)(
    lambda tf, x, y: nn_ops.softmax_cross_entropy_with_logits_v2(labels=y, logits=x))
grad_case("SparseSoftmaxCrossEntropyWithLogits", LOGITS)(
    lambda tf, x: nn_ops.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([3, 0, 1]), logits=x))
grad_case("TopKV2", np.array([[0.3, -1.2, 0.7, 2.5], [1.6, -0.4, 2.1, 0.2]]))(
    lambda tf, x: nn_ops.top_k(x, 2).values)
grad_case("TopKV2", RS.permutation(12).reshape(3, 4) / 3.0)(lambda tf, x: nn_ops.top_k(x, 3).values)


# --- the fused kernels against NumPy ---------------------------------------------------------
_NUMPY = {
    "ReluGrad": lambda g, f: g * (f > 0),
    "Relu6Grad": lambda g, f: g * ((f > 0) & (f < 6)),
    "EluGrad": lambda g, y: np.where(y > 0, g, g * (y + 1)),
    "SoftplusGrad": lambda g, f: g / (1 + np.exp(-f)),
    "SoftsignGrad": lambda g, f: g / (1 + np.abs(f)) ** 2,
}


@pytest.mark.parametrize("op_type", sorted(_NUMPY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_kernel_values(op_type: str, dtype: Any) -> None:
    second = "outputs" if op_type == "EluGrad" else "features"
    g, f = G.astype(dtype), X.astype(dtype)
    out = apply_op(op_type, name=op_type, gradients=fl.constant(g), **{second: fl.constant(f)})
    scalar = apply_op(op_type, name=op_type, gradients=fl.constant(g[0, 0]), **{second: fl.constant(f[0, 0])})
    with fl.Session() as s:
        v, sv = s.run([out, scalar])
    assert v.dtype == dtype and np.ndim(sv) == 0
    np.testing.assert_allclose(v, _NUMPY[op_type](g, f).astype(dtype), rtol=1e-6)


def test_relu_grad_int() -> None:
    out = apply_op("ReluGrad", gradients=fl.constant([1, 2, 3]), features=fl.constant([-1, 0, 4]), name="r")
    with fl.Session() as s:
        v = s.run(out)
    assert v.dtype == np.int32 and v.tolist() == [0, 0, 3]


def test_relu_grad_multiplies_by_the_mask_as_tensorflow() -> None:
    # TensorFlow 2.21's CPU ReluGrad is gradients * (features > 0): 0 * inf is NaN, and a
    # negative gradient masked out is -0.0 (tests/kernels/test_fast_paths.py compares
    # with TensorFlow itself).
    g = np.array([[np.inf, -np.inf, np.nan, 2.0], [1.0, np.nan, 3.0, -4.0]], np.float32)
    f = np.array([[-1.0, 0.0, -2.0, 1.0], [1.0, 5.0, 0.0, -2.0]], np.float32)
    out = apply_op("ReluGrad", gradients=fl.constant(g), features=fl.constant(f), name="r")
    with fl.Session() as s:
        v = s.run(out)
    np.testing.assert_array_equal(np.isnan(v), [[True, True, True, False], [False, True, False, False]])
    np.testing.assert_array_equal(v[~np.isnan(v)], [2.0, 1.0, 0.0, -0.0])
    assert np.signbit(v[1, 3]) and not np.signbit(v[1, 2])
    big = RS.randn(4, 5, 6).astype(np.float32)
    feat = RS.randn(4, 5, 6).astype(np.float32)
    with fl.Session() as s:
        v = s.run(apply_op("ReluGrad", gradients=fl.constant(big), features=fl.constant(feat),
                           name="r2"))
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v, big * (feat > 0))


def test_bias_add_grad_shape_error() -> None:
    with pytest.raises(ValueError, match="at least rank 2"):
        apply_op("BiasAddGrad", out_backprop=fl.constant([1.0]), name="b")


# --- differential tests against TensorFlow ----------------------------------------------
def _grads(tf: Any, ys: Any, xs: Any) -> list[Any]:
    out = (gradients if tf is fl else tf.gradients)(ys, xs)
    return [tf.constant("none") if g is None else g for g in out]


W1, B1 = RS.randn(4, 5).astype(np.float32), RS.randn(5).astype(np.float32)
W2 = RS.randn(5, 3).astype(np.float32)
XB = RS.randn(6, 4).astype(np.float32)
YB = np.array([0, 2, 1, 1, 0, 2])


def test_mlp_loss_gradients(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x, y = tf.placeholder(tf.float32, [None, 4]), tf.placeholder(tf.int64, [None])
        w1, b1, w2 = tf.Variable(W1), tf.Variable(B1), tf.Variable(W2)
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        logits = tf.matmul(h, w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        loss += 1e-3 * tf.nn.l2_loss(w1)
        return _grads(tf, loss, [w1, b1, w2]), {x: XB, y: YB}

    assert_same(tf1, build, rtol=1e-5)


def test_activation_gradients(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [2, 4])
        z = tf.nn.elu(x) + tf.nn.selu(x) * tf.nn.softplus(x) - tf.nn.softsign(x) + tf.nn.relu6(3.0 * x)
        z = tf.nn.leaky_relu(z, alpha=0.1) + tf.nn.log_softmax(x) + tf.nn.softmax(x, axis=0) * tf.tanh(x)
        return _grads(tf, z, [x]), {x: X.astype(np.float32)}

    assert_same(tf1, build, rtol=1e-5)


def test_softmax_xent_label_and_second_order(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x, lab = tf.constant(LOGITS), tf.constant(LABELS)
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=lab, logits=x)
        gx, glab = (gradients if tf is fl else tf.gradients)(loss * [1.0, 2.0, 0.5], [x, lab])
        (hv,) = (gradients if tf is fl else tf.gradients)(gx * tf.constant(G[:, :4].repeat(2, 0)[:3]), x)
        return [loss, gx, glab, hv]

    assert_same(tf1, build, rtol=1e-10)


def test_sparse_xent_and_top_k(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant(LOGITS.astype(np.float32))
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([3, 0, 1]), logits=x)
        values, _ = tf.nn.top_k(x, 2)
        return _grads(tf, [tf.reduce_sum(loss), tf.reduce_sum(values * [[1.0, 3.0]])], [x])

    assert_same(tf1, build, rtol=1e-5)


def test_bias_add_nchw_and_dynamic(tf1: Any) -> None:
    v = RS.randn(2, 3, 2, 2).astype(np.float32)

    def build(tf: Any) -> Any:
        x, b = tf.placeholder(tf.float32, None), tf.constant([1.0, 2.0, 3.0])
        y = tf.nn.bias_add(x, b, data_format="NCHW")
        return _grads(tf, tf.reduce_sum(y * y), [x, b]), {x: v}

    assert_same(tf1, build, rtol=1e-5)
