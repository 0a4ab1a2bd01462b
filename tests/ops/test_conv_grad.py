"""Gradients of the convolution and pooling ops: finite differences (TABLE entries for
the registry-wide check) and TensorFlow's tf.gradients, first and second order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops.builder import apply_op
from flowlab.ops.gradients_impl import gradients
from tests.difftest import assert_same
from tests.ops.gradient_check import TABLE, check_case, grad_case

RS = np.random.RandomState(7)
_POOL = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME", data_format="NHWC")


def _distinct(*shape: int) -> np.ndarray:
    """Values with no near-ties (max pooling is not differentiable at a tie)."""
    n = int(np.prod(shape))
    return (RS.permutation(n).reshape(shape) * 0.1 + RS.uniform(0, 0.01, shape)).astype(np.float64)


@grad_case("Conv2D", RS.randn(2, 4, 5, 2), RS.randn(2, 3, 2, 3))
def _(tf: Any, x: Any, f: Any) -> Any:
    return tf.nn.conv2d(x, f, [1, 2, 1, 1], "SAME")


@grad_case("Conv2D", RS.randn(1, 5, 5, 4), RS.randn(3, 2, 2, 4))
def _(tf: Any, x: Any, f: Any) -> Any:  # grouped, dilated, VALID
    return tf.nn.conv2d(x, f, 1, "VALID", dilations=[1, 2, 1, 1])


@grad_case("Conv2D", RS.randn(1, 3, 2, 4), RS.randn(2, 2, 3, 2))
def _(tf: Any, x: Any, f: Any) -> Any:  # NCHW
    return tf.nn.conv2d(x, f, [1, 1, 1, 2], "SAME", data_format="NCHW")


@grad_case("Conv2DBackpropInput", RS.randn(3, 3, 2, 2), RS.randn(1, 2, 2, 2))
def _(tf: Any, f: Any, dy: Any) -> Any:
    return tf.nn.conv2d_backprop_input([1, 4, 4, 2], f, dy, [1, 2, 2, 1], "SAME")


@grad_case("Conv2DBackpropFilter", RS.randn(1, 4, 4, 2), RS.randn(1, 3, 3, 3))
def _(tf: Any, x: Any, dy: Any) -> Any:
    return tf.nn.conv2d_backprop_filter(x, [2, 2, 2, 3], dy, [1, 1, 1, 1], "VALID")


@grad_case("MaxPool", _distinct(2, 5, 4, 2))
def _(tf: Any, x: Any) -> Any:
    return tf.nn.max_pool(x, 2, [1, 2, 1, 1], "SAME")


@grad_case("MaxPool", _distinct(1, 3, 4, 5))
def _(tf: Any, x: Any) -> Any:  # NCHW, overlapping windows
    return tf.nn.max_pool(x, 2, 1, "VALID", data_format="NCHW")


@grad_case("AvgPool", RS.randn(2, 5, 4, 2))
def _(tf: Any, x: Any) -> Any:
    return tf.nn.avg_pool(x, 3, 2, "SAME")


@grad_case("AvgPoolGrad", RS.randn(1, 2, 2, 2))
def _(tf: Any, g: Any) -> Any:
    return apply_op("AvgPoolGrad", orig_input_shape=[1, 3, 4, 2], grad=g, **_POOL)


@grad_case("MaxPoolGrad", _distinct(1, 4, 3, 2), RS.randn(1, 2, 2, 2))
def _(tf: Any, x: Any, g: Any) -> Any:
    return apply_op("MaxPoolGrad", orig_input=x, orig_output=tf.nn.max_pool(x, 2, 2, "SAME"),
                    grad=g, **_POOL)


@grad_case("MaxPoolGradGrad", _distinct(1, 4, 3, 2), RS.randn(1, 4, 3, 2))
def _(tf: Any, x: Any, g: Any) -> Any:
    return apply_op("MaxPoolGradGrad", orig_input=x, orig_output=tf.nn.max_pool(x, 2, 2, "SAME"),
                    grad=g, **_POOL)


_CONV_OPS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "AvgPool",
             "AvgPoolGrad", "MaxPoolGrad", "MaxPoolGradGrad")
_CASES = [c for op in _CONV_OPS for c in TABLE[op]]


@pytest.mark.parametrize("case", _CASES, ids=[c.id for c in _CASES])
def test_finite_differences(case: Any) -> None:
    check_case(case)


def _grads(tf: Any) -> Any:
    return gradients if tf is fl else tf.gradients


@pytest.mark.parametrize("padding,strides", [("SAME", 1), ("VALID", 2), ("SAME", [2, 1])])
def test_conv_gradients_match_tensorflow(tf1: Any, padding: str, strides: Any) -> None:
    x, f = RS.randn(2, 6, 5, 3).astype(np.float32), RS.randn(3, 2, 3, 4).astype(np.float32)

    def build(tf: Any) -> Any:
        xp, fp = tf.placeholder(tf.float32, [None, 6, 5, 3]), tf.placeholder(tf.float32, [3, 2, 3, 4])
        y = tf.nn.conv2d(xp, fp, strides, padding)
        w = tf.constant(np.random.RandomState(1).randn(*y.shape.as_list()[1:]).astype(np.float32))
        gx, gf = _grads(tf)(tf.reduce_sum(tf.tanh(y) * w), [xp, fp])
        # Second order: through both backprop ops.
        hx, hf = _grads(tf)(tf.reduce_sum(gx * gx) + tf.reduce_sum(gf * gf), [xp, fp])
        names = [t.op.name for t in (gx, gf)]
        return [gx, gf, hx, hf, tf.constant(names)], {xp: x, fp: f}

    assert_same(tf1, build, rtol=2e-4, atol=2e-4)


def test_pool_second_order_matches_tensorflow(tf1: Any) -> None:
    x = _distinct(2, 5, 5, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        xp = tf.placeholder(tf.float32, x.shape)
        m = tf.nn.max_pool(xp, 3, 2, "SAME")
        a = tf.nn.avg_pool(xp, 2, 1, "VALID")
        g = _grads(tf)(tf.reduce_sum(m * m) + tf.reduce_sum(a * a * a), xp)[0]
        h = _grads(tf)(tf.reduce_sum(g * g), xp)[0]
        return [g, h, tf.constant([g.op.type, g.op.name])], {xp: x}

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_conv_transpose_gradient_matches_tensorflow(tf1: Any) -> None:
    v, f = RS.randn(1, 3, 3, 2).astype(np.float32), RS.randn(3, 3, 4, 2).astype(np.float32)

    def build(tf: Any) -> Any:
        vp, fp = tf.constant(v), tf.constant(f)
        y = tf.nn.conv2d_transpose(vp, fp, [1, 6, 6, 4], 2, "SAME")
        return _grads(tf)(tf.reduce_sum(y * y), [vp, fp])

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)
