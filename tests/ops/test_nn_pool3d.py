"""3-D pooling (max_pool3d, avg_pool3d) and its gradient ops against TensorFlow
(values, ties, first and second order), finite differences and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same
from tests.ops.gradient_check import TABLE, check_case, grad_case
from tests.programs.hidden_support import same_error

RS = np.random.RandomState(41)
_F32 = dict(eps=1e-2, rtol=2e-2, atol=2e-3)  # MaxPool3D is float32-only: a float32 step


def _distinct(*shape: int) -> np.ndarray:
    n = int(np.prod(shape))
    return RS.permutation(n).reshape(shape) * 0.1 + RS.uniform(0, 0.01, shape)


@grad_case("MaxPool3D", _distinct(1, 3, 2, 3, 2), **_F32)
def _(tf: Any, x: Any) -> Any:
    return tf.nn.max_pool3d(tf.cast(x, tf.float32), [1, 2, 2, 2, 1], [1, 1, 1, 2, 1], "SAME")


@grad_case("AvgPool3D", RS.randn(1, 3, 3, 2, 2))
def _(tf: Any, x: Any) -> Any:
    return tf.nn.avg_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 1, 1, 1], "SAME")


@grad_case("AvgPool3DGrad", RS.randn(1, 2, 2, 1, 2))
def _(tf: Any, dy: Any) -> Any:
    from flowlab.ops.builder import apply_op
    return apply_op("AvgPool3DGrad", orig_input_shape=[1, 3, 3, 2, 2], grad=dy, ksize=[1, 2, 2, 2, 1],
                    strides=[1, 2, 2, 2, 1], padding="SAME")


@grad_case("MaxPool3DGrad", RS.randn(1, 2, 2, 1, 1), **_F32)
def _(tf: Any, dy: Any) -> Any:
    from flowlab.ops.builder import apply_op
    x = tf.constant(_distinct(1, 3, 3, 2, 1).astype(np.float32))
    y = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
    return apply_op("MaxPool3DGrad", orig_input=x, orig_output=y, grad=tf.cast(dy, tf.float32),
                    ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME")


@grad_case("MaxPool3DGradGrad", RS.randn(1, 3, 3, 2, 1), **_F32)
def _(tf: Any, g: Any) -> Any:
    from flowlab.ops.builder import apply_op
    x = tf.constant(_distinct(1, 3, 3, 2, 1).astype(np.float32))
    y = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
    return apply_op("MaxPool3DGradGrad", orig_input=x, orig_output=y, grad=tf.cast(g, tf.float32),
                    ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME")


_OPS = ("MaxPool3D", "AvgPool3D", "AvgPool3DGrad", "MaxPool3DGrad", "MaxPool3DGradGrad")


@pytest.mark.parametrize("case", [c for op in _OPS for c in TABLE[op] if "pool3d" in c.where],
                         ids=lambda c: c.id)
def test_finite_differences(case: Any) -> None:
    check_case(case)


@pytest.mark.parametrize("padding,ksize,strides", [("SAME", [1, 2, 2, 2, 1], [1, 2, 2, 2, 1]),
                                                   ("VALID", [1, 3, 2, 2, 1], [1, 1, 2, 1, 1]),
                                                   ("SAME", [1, 3, 3, 1, 1], [1, 2, 1, 2, 1])])
def test_pool3d_forward_and_gradients_match_tensorflow(tf1: Any, padding: str, ksize: Any, strides: Any) -> None:
    def build(tf: Any) -> Any:
        rng = np.random.RandomState(3)
        x = tf.constant(np.round(rng.randn(2, 5, 4, 6, 3), 1).astype(np.float32))  # ties on purpose
        ym = tf.nn.max_pool3d(x, ksize, strides, padding)
        ya = tf.nn.avg_pool3d(x, ksize, strides, padding)
        gx = tf.gradients(tf.reduce_sum(ym * ym) + tf.reduce_sum(tf.sin(ya)), x)[0]
        ggx = tf.gradients(tf.reduce_sum(tf.gradients(tf.reduce_sum(ym * ym), x)[0] * x), x)[0]
        return ym, ya, gx, ggx, ym.name, ya.name

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_pool3d_errors(tf1: Any) -> None:
    same_error(tf1, lambda tf: tf.nn.max_pool3d(tf.ones([1, 4, 4, 4]), [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME"),
               "Shape must be rank 5 but is rank 4")
    same_error(tf1, lambda tf: tf.nn.avg_pool3d(tf.ones([1, 2, 2, 2, 1]), [1, 3, 3, 3, 1], [1, 1, 1, 1, 1],
                                                "VALID"))


def test_grad_grad_reads_the_first_maximum(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        from flowlab.ops.builder import apply_op
        x = tf.constant(np.array([1, 3, 3, 2, 3, 0, 1, 1], np.float32).reshape(1, 2, 2, 2, 1))
        g = tf.constant(np.arange(10, 90, 10, dtype=np.float32).reshape(1, 2, 2, 2, 1))
        y = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
        kw = dict(orig_input=x, orig_output=y, grad=g, ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1],
                  padding="VALID")
        if hasattr(tf, "raw_ops"):
            return tf.raw_ops.MaxPool3DGradGrad(**kw)
        return apply_op("MaxPool3DGradGrad", **kw)
    assert_same(tf1, build)
