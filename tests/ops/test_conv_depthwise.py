"""Depthwise / separable / atrous convolutions, nn.convolution, nn.pool and
SpaceToBatchND / BatchToSpaceND: values, gradients and graphs against TensorFlow,
finite-difference gradient cases, NumPy references and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import TABLE, check_case, grad_case
from tests.programs.hidden_support import same_error, same_results

RS = np.random.RandomState(11)


@grad_case("DepthwiseConv2dNative", RS.randn(1, 4, 5, 2), RS.randn(2, 3, 2, 2))
def _(tf: Any, x: Any, f: Any) -> Any:
    return tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME")


@grad_case("DepthwiseConv2dNative", RS.randn(1, 2, 4, 3), RS.randn(2, 2, 2, 1))
def _(tf: Any, x: Any, f: Any) -> Any:  # NCHW, VALID
    return tf.nn.depthwise_conv2d_native(x, f, [1, 1, 2, 2], "VALID", data_format="NCHW")


@grad_case("DepthwiseConv2dNativeBackpropInput", RS.randn(2, 2, 2, 2), RS.randn(1, 2, 2, 4))
def _(tf: Any, f: Any, dy: Any) -> Any:
    return tf.nn.depthwise_conv2d_native_backprop_input([1, 3, 3, 2], f, dy, [1, 1, 1, 1], "VALID")


@grad_case("DepthwiseConv2dNativeBackpropFilter", RS.randn(1, 3, 4, 2), RS.randn(1, 2, 2, 2))
def _(tf: Any, x: Any, dy: Any) -> Any:
    return tf.nn.depthwise_conv2d_native_backprop_filter(x, [2, 2, 2, 1], dy, [1, 2, 2, 1], "SAME")


@grad_case("SpaceToBatchND", RS.randn(2, 3, 4, 1))
def _(tf: Any, x: Any) -> Any:
    return tf.nn.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 2]])


@grad_case("BatchToSpaceND", RS.randn(4, 2, 3, 1))
def _(tf: Any, x: Any) -> Any:
    return tf.nn.batch_to_space_nd(x, [2, 2], [[0, 1], [1, 1]])


_OPS = ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
        "SpaceToBatchND", "BatchToSpaceND")


@pytest.mark.parametrize("case", [c for op in _OPS for c in TABLE[op] if "depthwise" in c.where],
                         ids=lambda c: c.id)
def test_finite_differences(case: Any) -> None:
    check_case(case)


def _numpy_depthwise(x: np.ndarray, f: np.ndarray, stride: int, rate: int) -> np.ndarray:
    """VALID depthwise conv by loops (the definition)."""
    n, h, w, c = x.shape
    kh, kw, _, m = f.shape
    eh, ew = (kh - 1) * rate + 1, (kw - 1) * rate + 1
    oh, ow = (h - eh) // stride + 1, (w - ew) // stride + 1
    y = np.zeros((n, oh, ow, c, m))
    for a in range(oh):
        for b in range(ow):
            for i in range(kh):
                for j in range(kw):
                    y[:, a, b] += x[:, a * stride + i * rate, b * stride + j * rate, :, None] * f[i, j]
    return y.reshape(n, oh, ow, c * m)


@pytest.mark.parametrize("stride,rate", [(1, 1), (2, 1), (1, 2)])
def test_depthwise_matches_loops(stride: int, rate: int) -> None:
    x = RS.randn(2, 7, 6, 3)
    f = RS.randn(3, 2, 3, 2)
    with fl.Graph().as_default(), fl.Session() as sess:
        y = fl.nn.depthwise_conv2d(x, f, [1, stride, stride, 1], "VALID", rate=[rate, rate])
        got = sess.run(y)
    np.testing.assert_allclose(got, _numpy_depthwise(x, f, stride, rate), rtol=1e-10)


_FORWARD = {
    "same_stride2": lambda tf, x, f: tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME"),
    "valid_stride3": lambda tf, x, f: tf.nn.depthwise_conv2d(x, f, [1, 3, 3, 1], "VALID"),
    "rate2_same": lambda tf, x, f: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", rate=[2, 2]),
    "rate_2_3_valid": lambda tf, x, f: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "VALID", rate=[2, 3]),
    "dilations_kw": lambda tf, x, f: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", dilations=[3, 1]),
    "native_explicit": lambda tf, x, f: tf.nn.depthwise_conv2d_native(
        x, f, [1, 2, 2, 1], [[0, 0], [1, 2], [0, 1], [0, 0]]),
    "native_nchw": lambda tf, x, f: tf.nn.depthwise_conv2d_native(
        tf.transpose(x, [0, 3, 1, 2]), f, [1, 1, 2, 2], "SAME", data_format="NCHW"),
}


@pytest.mark.parametrize("name", sorted(_FORWARD))
def test_depthwise_forward_and_backward_match_tensorflow(tf1: Any, name: str) -> None:
    if name == "native_nchw":
        pytest.skip("TensorFlow's CPU DepthwiseConv2dNative supports NHWC only")

    def build(tf: Any) -> Any:
        rng = np.random.RandomState(3)
        x = tf.constant(rng.randn(2, 9, 8, 3).astype(np.float32))
        f = tf.constant(rng.randn(3, 2, 3, 2).astype(np.float32))
        y = _FORWARD[name](tf, x, f)
        w = tf.constant(rng.randn(*y.shape.as_list()).astype(np.float32))
        return [y] + tf.gradients(tf.reduce_sum(y * w), [x, f])

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_depthwise_nchw_equals_nhwc() -> None:
    x, f = RS.randn(2, 5, 6, 3), RS.randn(2, 3, 3, 2)
    with fl.Graph().as_default(), fl.Session() as sess:
        f = fl.constant(f)
        a = fl.nn.depthwise_conv2d_native(x, f, [1, 2, 2, 1], "SAME")
        xc = fl.constant(x.transpose(0, 3, 1, 2))
        b = fl.transpose(fl.nn.depthwise_conv2d_native(xc, f, [1, 1, 2, 2], "SAME", data_format="NCHW"),
                         [0, 2, 3, 1])
        ga, gb = fl.gradients(fl.reduce_sum(a * a), f)[0], fl.gradients(fl.reduce_sum(b * b), f)[0]
        va, vb, da, db = sess.run([a, b, ga, gb])
    np.testing.assert_allclose(va, vb, rtol=1e-12)
    np.testing.assert_allclose(da, db, rtol=1e-10)


def test_second_order_matches_tensorflow(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        rng = np.random.RandomState(6)
        x = tf.constant(rng.randn(1, 5, 4, 2).astype(np.float32))
        f = tf.constant(rng.randn(2, 2, 2, 2).astype(np.float32))
        y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME")
        gx, gf = tf.gradients(tf.reduce_sum(tf.square(y)), [x, f])
        return tf.gradients(tf.reduce_sum(gx * gx) + tf.reduce_sum(tf.sin(gf)), [x, f])
    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_separable_and_atrous_match_tensorflow(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        rng = np.random.RandomState(4)
        x = tf.constant(rng.randn(2, 8, 7, 3).astype(np.float32))
        dw = tf.constant(rng.randn(3, 3, 3, 2).astype(np.float32))
        pw = tf.constant(rng.randn(1, 1, 6, 4).astype(np.float32))
        k = tf.constant(rng.randn(3, 2, 3, 5).astype(np.float32))
        ys = [tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "VALID"),
              tf.nn.separable_conv2d(x, dw, pw, [1, 2, 2, 1], "SAME"),
              tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME", rate=[2, 2]),
              tf.nn.atrous_conv2d(x, k, 2, "SAME"), tf.nn.atrous_conv2d(x, k, 3, "VALID"),
              tf.nn.convolution(x, k, "SAME", dilation_rate=[2, 1]),
              tf.nn.convolution(x, k, "VALID", strides=[2, 1])]
        loss = tf.add_n([tf.reduce_sum(tf.sin(y)) for y in ys])
        names = [(y.name, y.op.type) for y in ys]
        return ys + tf.gradients(loss, [x, dw, pw, k]), names

    def run(tf: Any) -> Any:
        out, names = build(tf)
        with tf.Session() as sess:
            return sess.run(out), names

    same_results(tf1, run, rtol=1e-4, atol=1e-4)


def test_pool_matches_tensorflow(tf1: Any) -> None:
    def run(tf: Any) -> Any:
        x = tf.constant(np.random.RandomState(5).randn(2, 7, 8, 3).astype(np.float32))
        ys = [tf.nn.pool(x, [2, 2], "MAX", "SAME", strides=[2, 2]),
              tf.nn.pool(x, [3, 2], "AVG", "VALID", strides=[1, 2]),
              tf.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[2, 2]),
              tf.nn.pool(x, [2, 3], "AVG", "VALID", dilation_rate=[2, 1])]
        grads = tf.gradients(tf.add_n([tf.reduce_sum(y * y) for y in ys]), x)
        with tf.Session() as sess:
            return sess.run(ys + grads), [(y.name, y.op.type) for y in ys]
    same_results(tf1, run, rtol=1e-5, atol=1e-5)


def test_graph_names_match_tensorflow(tf1: Any) -> None:
    def run(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [2, 7, 6, 3], name="x")
        w = tf.placeholder(tf.float32, [3, 3, 3, 2], name="w")
        pw = tf.placeholder(tf.float32, [1, 1, 6, 4], name="pw")
        tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2])
        tf.nn.separable_conv2d(x, w, pw, [1, 1, 1, 1], "VALID")
        tf.nn.atrous_conv2d(x, tf.ones([3, 3, 3, 5]), 2, "SAME")
        return sorted((op.name, op.type, tuple(i.name for i in op.inputs))
                      for op in tf.get_default_graph().get_operations())
    same_results(tf1, run)


def test_space_to_batch_round_trip_and_values(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant(np.arange(2 * 5 * 4 * 2, dtype=np.float32).reshape(2, 5, 4, 2))
        s = tf.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 2]]) if hasattr(tf, "space_to_batch_nd") \
            else tf.nn.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 2]])
        b2s = tf.batch_to_space_nd if hasattr(tf, "batch_to_space_nd") else tf.nn.batch_to_space_nd
        back = b2s(s, [2, 2], [[1, 0], [0, 2]])
        one = (tf.space_to_batch_nd if hasattr(tf, "space_to_batch_nd") else tf.nn.space_to_batch_nd)(
            tf.constant(np.arange(12, dtype=np.int32).reshape(1, 6, 2)), [3], [[0, 0]])
        return s, back, one
    assert_same(tf1, build)


def test_errors(tf1: Any) -> None:
    def x(tf: Any) -> Any:
        return tf.ones([1, 5, 5, 3])
    same_error(tf1, lambda tf: tf.nn.depthwise_conv2d(x(tf), tf.ones([2, 2, 4, 1]), [1, 1, 1, 1], "SAME"),
               "Dimensions must be equal, but are 3 and 4")
    same_error(tf1, lambda tf: tf.nn.separable_conv2d(x(tf), tf.ones([2, 2, 3, 1]), tf.ones([2, 1, 3, 2]),
                                                      [1, 1, 1, 1], "SAME"))
    same_error(tf1, lambda tf: tf.nn.pool(x(tf), [2, 2], "MAX", "SAME", dilation_rate=[2, 2]),
               "pooling with 'SAME' padding is not implemented for `dilation_rate` > 1")
    same_error(tf1, lambda tf: tf.nn.pool(x(tf), [2, 2], "MAX", "VALID", dilation_rate=[2, 2], strides=[2, 2]))
    same_error(tf1, lambda tf: tf.nn.depthwise_conv2d(x(tf), tf.ones([2, 2, 3, 1]), [1, 1, 1, 1], "VALIDX"))


@pytest.mark.parametrize("case", ["depth", "strides"])
def test_depthwise_runtime_errors(tf1: Any, case: str) -> None:
    def prog(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [None, None, None, None])
        strides = [1, 1, 1, 1] if case == "depth" else [1, 1, 2, 1]
        y = tf.nn.depthwise_conv2d_native(p, tf.ones([2, 2, 3, 1]), strides, "VALID")
        with tf.Session() as sess:
            return sess.run(y, {p: np.ones((1, 4, 4, 2 if case == "depth" else 3), np.float32)})
    same_error(tf1, prog, None if case == "depth" else "only supports equal length strides")


def test_one_d_convolution_and_pool_match_tensorflow(tf1: Any) -> None:
    def run(tf: Any) -> Any:
        rng = np.random.RandomState(9)
        x = tf.constant(rng.randn(2, 9, 3).astype(np.float32), name="x")
        k = tf.constant(rng.randn(3, 3, 4).astype(np.float32), name="k")
        ys = [tf.nn.convolution(x, k, "SAME", strides=[2]), tf.nn.convolution(x, k, "VALID"),
              tf.nn.pool(x, [2], "MAX", "VALID", strides=[2]), tf.nn.pool(x, [3], "AVG", "SAME")]
        grads = tf.gradients(tf.add_n([tf.reduce_sum(tf.sin(y)) for y in ys]), [x, k])
        names = sorted((op.name, op.type, tuple(i.name for i in op.inputs))
                       for op in tf.get_default_graph().get_operations() if not op.name.startswith("gradients"))
        with tf.Session() as sess:
            return sess.run(ys + grads), names
    same_results(tf1, run, rtol=1e-5, atol=1e-5)
