"""LRN (+ LRNGrad), max_pool_with_argmax (+ its gradient op) and swish/silu:
values, dtypes, gradients and errors against TensorFlow, NumPy references and
finite-difference gradient cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import TABLE, check_case, grad_case
from tests.programs.hidden_support import same_error, same_results

RS = np.random.RandomState(21)


def _distinct(*shape: int) -> np.ndarray:
    n = int(np.prod(shape))
    return RS.permutation(n).reshape(shape) * 0.1 + RS.uniform(0, 0.01, shape)


@grad_case("LRN", RS.randn(1, 2, 2, 5) * 0.5, eps=1e-2, rtol=2e-2, atol=2e-3)  # a float32-only op
def _(tf: Any, x: Any) -> Any:
    return tf.nn.lrn(tf.cast(x, tf.float32), depth_radius=2, bias=1.5, alpha=0.3, beta=0.75)


@grad_case("MaxPoolWithArgmax", _distinct(2, 3, 4, 2))
def _(tf: Any, x: Any) -> Any:
    return tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 1, 1], "SAME")[0]


_OPS = ("LRN", "MaxPoolWithArgmax")


@pytest.mark.parametrize("case", [c for op in _OPS for c in TABLE[op] if "lrn_swish" in c.where],
                         ids=lambda c: c.id)
def test_finite_differences(case: Any) -> None:
    check_case(case)


def _numpy_lrn(x: np.ndarray, r: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    out = np.empty_like(x)
    depth = x.shape[-1]
    for d in range(depth):
        lo, hi = max(0, d - r), min(depth, d + r + 1)
        out[..., d] = x[..., d] / (bias + alpha * (x[..., lo:hi] ** 2).sum(-1)) ** beta
    return out


@pytest.mark.parametrize("r", [0, 1, 5, 9])
def test_lrn_matches_numpy(r: int) -> None:
    x = RS.randn(2, 3, 2, 7).astype(np.float32)
    with fl.Graph().as_default(), fl.Session() as sess:
        got = sess.run(fl.nn.local_response_normalization(x, r, 2.0, 0.1, 0.6))
    np.testing.assert_allclose(got, _numpy_lrn(x.astype(np.float64), r, 2.0, 0.1, 0.6), rtol=2e-6)
    assert got.dtype == np.float32


@pytest.mark.parametrize("args", [(5, 1.0, 1.0, 0.5), (2, 1.0, 0.5, 0.75), (1, 2.0, 1e-3, 1.0), (3, 0.5, 2.0, 0.2)])
def test_lrn_and_gradient_match_tensorflow(tf1: Any, args: Any) -> None:
    r, bias, alpha, beta = args

    def build(tf: Any) -> Any:
        rng = np.random.RandomState(1)
        x = tf.constant(rng.randn(2, 3, 4, 8).astype(np.float32))
        y = tf.nn.lrn(x, r, bias, alpha, beta)
        w = tf.constant(rng.randn(2, 3, 4, 8).astype(np.float32))
        return y, tf.gradients(tf.reduce_sum(y * w), x)[0], y.op.type, y.name

    assert_same(tf1, build, rtol=2e-5, atol=2e-5)


def test_lrn_errors(tf1: Any) -> None:
    same_error(tf1, lambda tf: tf.nn.lrn(tf.ones([2, 3, 4])), "Shape must be rank 4 but is rank 3")
    same_error(tf1, lambda tf: tf.nn.lrn(tf.ones([1, 2, 2, 3], tf.float64)))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("include_batch", [False, True])
def test_max_pool_with_argmax_matches_tensorflow(tf1: Any, padding: str, include_batch: bool) -> None:
    def build(tf: Any) -> Any:
        rng = np.random.RandomState(2)
        x = tf.constant(np.round(rng.randn(2, 5, 7, 3), 1).astype(np.float32))  # ties on purpose
        y, arg = tf.nn.max_pool_with_argmax(x, [1, 3, 2, 1], [1, 2, 2, 1], padding,
                                            include_batch_in_index=include_batch)
        y32, arg32 = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 1, 2, 1], padding, Targmax=tf.int32,
                                                include_batch_in_index=include_batch)
        g = tf.gradients(tf.reduce_sum(y * y), x)[0]
        return y, arg, y32, arg32, g, [t.name for t in (y, arg, y32, arg32)]

    assert_same(tf1, build)


def test_max_pool_with_argmax_int32_gradient_has_no_cpu_kernel(tf1: Any) -> None:
    def prog(tf: Any) -> Any:
        x = tf.ones([1, 4, 4, 1])
        y = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME", Targmax=tf.int32)[0]
        with tf.Session() as sess:
            return sess.run(tf.gradients(y, x))
    same_error(tf1, prog, "No OpKernel was registered to support Op 'MaxPoolGradWithArgmax'")


def test_max_pool_with_argmax_errors(tf1: Any) -> None:
    same_error(tf1, lambda tf: tf.nn.max_pool_with_argmax(tf.ones([1, 4, 4, 1]), [1, 2, 2, 1], [1, 2, 2, 1],
                                                          "SAME", data_format="NCHW"),
               "`data_format` values other  than 'NHWC' are not supported")
    same_error(tf1, lambda tf: tf.nn.max_pool_with_argmax(tf.ones([1, 4, 4, 1]), [1, 2, 2, 1], [1, 2, 2, 1],
                                                          "FULL"))
    same_error(tf1, lambda tf: tf.nn.max_pool_with_argmax(tf.ones([4, 4, 1]), [1, 2, 2, 1], [1, 2, 2, 1],
                                                          "SAME"))


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.0])
def test_swish_and_gradients_match_tensorflow(tf1: Any, beta: float) -> None:
    def run(tf: Any) -> Any:
        x = tf.constant(np.linspace(-4, 4, 12).reshape(3, 4).astype(np.float32))
        b = tf.constant(beta)
        y = tf.nn.swish(x, b)
        z = tf.nn.silu(x)
        gx, gb = tf.gradients(tf.reduce_sum(y * y), [x, b])
        gz = tf.gradients(tf.reduce_sum(tf.sin(z)), x)[0]
        with tf.Session() as sess:
            return sess.run([y, z, gx, gb, gz])
    same_results(tf1, run, rtol=1e-5, atol=1e-6)


def test_swish_float64_default_beta(tf1: Any) -> None:
    assert_same(tf1, lambda tf: tf.nn.swish(tf.constant([-1.0, 0.0, 2.5], tf.float64)))
