"""tf.nn.max_pool1d/avg_pool1d/max_pool2d/avg_pool2d/max_pool_v2/avg_pool_v2 and
conv1d_transpose/conv3d_transpose/conv_transpose: values, static shapes, gradients
and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

RS = np.random.RandomState(12)
X1, X2, X3 = (RS.randn(2, 9, 3).astype(np.float32), RS.randn(2, 6, 7, 3).astype(np.float32),
              RS.randn(1, 4, 6, 5, 2).astype(np.float32))


def test_pools(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        a, b, c = tf.constant(X1), tf.constant(X2), tf.constant(X3)
        outs = [tf.nn.max_pool1d(a, 3, 2, "VALID"), tf.nn.avg_pool1d(a, [2], [1], "SAME"),
                tf.nn.max_pool2d(b, 2, 2, "SAME"), tf.nn.avg_pool2d(b, [3, 2], [1, 2], "VALID"),
                tf.nn.max_pool_v2(a, 2, 2, "SAME"), tf.nn.avg_pool_v2(b, 2, 1, "VALID"),
                tf.nn.max_pool_v2(c, 2, 2, "VALID"), tf.nn.avg_pool_v2(c, [2, 3, 2], 1, "SAME")]
        grads = tf.gradients(sum(tf.reduce_sum(o * o) for o in outs), [a, b, c])
        return outs + grads + [tf.constant([str(o.shape) for o in outs])]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding,stride", [("SAME", 2), ("VALID", 1), ("VALID", 2)])
def test_conv_transposes(tf1: Any, padding: str, stride: int) -> None:
    x1, w1 = RS.randn(2, 5, 3).astype(np.float32), RS.randn(3, 4, 3).astype(np.float32)
    x3, w3 = RS.randn(1, 3, 4, 2, 3).astype(np.float32), RS.randn(2, 2, 2, 4, 3).astype(np.float32)
    w2 = RS.randn(3, 3, 4, 3).astype(np.float32)
    x2 = RS.randn(2, 4, 4, 3).astype(np.float32)

    def out_len(n: int, k: int) -> int:
        return n * stride if padding == "SAME" else (n - 1) * stride + k

    def build(tf: Any) -> Any:
        a, b, c = tf.constant(x1), tf.constant(x3), tf.constant(x2)
        y1 = tf.nn.conv1d_transpose(a, w1, [2, out_len(5, 3), 4], stride, padding)
        y3 = tf.nn.conv3d_transpose(b, w3, [1, out_len(3, 2), out_len(4, 2), out_len(2, 2), 4],
                                    [1, stride, stride, stride, 1], padding)
        y2 = tf.nn.conv_transpose(c, w2, [2, out_len(4, 3), out_len(4, 3), 4], stride, padding)
        y1b = tf.nn.conv_transpose(a, w1, [2, out_len(5, 3), 4], stride, padding)
        grads = tf.gradients(tf.reduce_sum(y1 * y1) + tf.reduce_sum(y3 * y3) + tf.reduce_sum(y2), [a, b, c])
        return [y1, y3, y2, y1b, *grads, tf.constant([str(y.shape) for y in (y1, y3, y2)])]

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_errors(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="data_format"):
                tf.nn.max_pool1d(tf.constant(X1), 2, 2, "VALID", data_format="NHWC")
            with pytest.raises(ValueError, match="should be of length"):
                tf.nn.max_pool2d(tf.constant(X2), [2, 2, 2], 2, "VALID")


@pytest.mark.parametrize("rate,padding", [(1, "SAME"), (2, "SAME"), (2, "VALID"), (3, "SAME")])
def test_atrous_conv2d_transpose(tf1: Any, rate: int, padding: str) -> None:
    w = RS.randn(3, 3, 4, 2).astype(np.float32)
    out_h = 9
    eff = 3 + 2 * (rate - 1)
    in_h = out_h if padding == "SAME" else out_h - eff + 1
    x = RS.randn(2, in_h, in_h, 2).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        y = tf.nn.atrous_conv2d_transpose(xt, w, [2, out_h, out_h, 4], rate, padding)
        return [y, tf.gradients(tf.reduce_sum(y * y), xt)]

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_conv3d_backprop_filter_v1(tf1: Any) -> None:
    x = RS.randn(1, 4, 4, 4, 2).astype(np.float32)
    w = RS.randn(2, 2, 2, 2, 3).astype(np.float32)
    g = RS.randn(1, 3, 3, 3, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        return tf.nn.conv3d_backprop_filter(x, w.shape, g, [1, 1, 1, 1, 1], "VALID")

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)
