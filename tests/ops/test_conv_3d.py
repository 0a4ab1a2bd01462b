"""Conv3D and its V2 backprops: values and gradients (first and second order) against
TensorFlow, finite differences, a NumPy reference, and TensorFlow's CPU limits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import TABLE, check_case, grad_case
from tests.programs.hidden_support import same_error

RS = np.random.RandomState(31)


@grad_case("Conv3D", RS.randn(1, 3, 2, 3, 2), RS.randn(2, 1, 2, 2, 2))
def _(tf: Any, x: Any, f: Any) -> Any:
    return tf.nn.conv3d(x, f, [1, 1, 1, 2, 1], "SAME")


@grad_case("Conv3DBackpropInputV2", RS.randn(2, 2, 1, 1, 2), RS.randn(1, 2, 2, 2, 2))
def _(tf: Any, f: Any, dy: Any) -> Any:
    return tf.nn.conv3d_backprop_input_v2([1, 3, 3, 2, 1], f, dy, [1, 1, 1, 1, 1], "VALID")


@grad_case("Conv3DBackpropFilterV2", RS.randn(1, 2, 3, 2, 1), RS.randn(1, 2, 2, 1, 2))
def _(tf: Any, x: Any, dy: Any) -> Any:
    return tf.nn.conv3d_backprop_filter_v2(x, [1, 2, 2, 1, 2], dy, [1, 1, 2, 2, 1], "SAME")


_OPS = ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2")


@pytest.mark.parametrize("case", [c for op in _OPS for c in TABLE[op] if "conv_3d" in c.where],
                         ids=lambda c: c.id)
def test_finite_differences(case: Any) -> None:
    check_case(case)


def test_conv3d_matches_loops() -> None:
    x, f = RS.randn(2, 4, 5, 3, 2), RS.randn(2, 3, 2, 2, 3)
    with fl.Graph().as_default(), fl.Session() as sess:
        got = sess.run(fl.nn.conv3d(x, f, [1, 1, 2, 1, 1], "VALID"))
    want = np.zeros((2, 3, 2, 2, 3))
    for a in range(3):
        for b in range(2):
            for e in range(2):
                patch = x[:, a:a + 2, 2 * b:2 * b + 3, e:e + 2, :]
                want[:, a, b, e] = np.einsum("ndhwc,dhwco->no", patch, f)
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("padding,strides", [("SAME", [1, 1, 1, 1, 1]), ("VALID", [1, 2, 1, 3, 1]),
                                             ("SAME", [1, 2, 3, 2, 1])])
def test_conv3d_forward_and_backward_match_tensorflow(tf1: Any, padding: str, strides: list[int]) -> None:
    def build(tf: Any) -> Any:
        rng = np.random.RandomState(8)
        x = tf.constant(rng.randn(2, 5, 6, 7, 3).astype(np.float32))
        f = tf.constant(rng.randn(3, 2, 3, 3, 4).astype(np.float32))
        y = tf.nn.conv3d(x, f, strides, padding)
        w = tf.constant(rng.randn(*y.shape.as_list()).astype(np.float32))
        gx, gf = tf.gradients(tf.reduce_sum(y * w), [x, f])
        ggx = tf.gradients(tf.reduce_sum(gx * gx) + tf.reduce_sum(gf * gf), [x, f])
        return [y, gx, gf] + ggx

    assert_same(tf1, build, rtol=2e-4, atol=2e-3)


def test_conv3d_errors(tf1: Any) -> None:
    same_error(tf1, lambda tf: tf.nn.conv3d(tf.ones([1, 4, 4, 4, 2]), tf.ones([2, 2, 2, 3, 3]), [1] * 5, "SAME"),
               "Depth of input (2) is not a multiple of input depth of filter (3)")
    same_error(tf1, lambda tf: tf.nn.conv3d(tf.ones([4, 4, 4, 2]), tf.ones([2, 2, 2, 2, 3]), [1] * 5, "SAME"),
               "Shape must be rank 5 but is rank 4")

    def dilated(tf: Any) -> Any:
        y = tf.nn.conv3d(tf.ones([1, 4, 4, 4, 2]), tf.ones([2, 2, 2, 2, 3]), [1] * 5, "SAME",
                         dilations=[1, 2, 1, 1, 1])
        with tf.Session() as sess:
            return sess.run(y)
    same_error(tf1, dilated, "CPU implementation of Conv3D currently only supports dilated rates of 1.")
