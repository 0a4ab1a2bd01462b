"""tf.complex / real / imag / angle / to_complex64 / to_complex128, the FFTs, and
space_to_depth / depth_to_space / space_to_batch / batch_to_space: values, dtypes,
gradients and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(4)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_complex_parts(tf1: Any, dt: Any) -> None:
    re, im = RS.randn(2, 3).astype(dt), RS.randn(3).astype(dt)

    def build(tf: Any) -> Any:
        z = tf.complex(tf.constant(re), tf.constant(im))
        r = tf.constant(re)
        return [z, tf.real(z), tf.imag(z), tf.angle(z), tf.math.real(z), tf.math.imag(z), tf.math.angle(z),
                tf.real(r), tf.imag(r), tf.angle(r - 0.1), tf.to_complex64(r), tf.to_complex128(r)]

    assert_same(tf1, build)


def test_complex_gradients(tf1: Any) -> None:
    re, im = RS.randn(2, 3).astype(np.float32), RS.randn(1, 3).astype(np.float32)
    w = (RS.randn(2, 3) + 1j * RS.randn(2, 3)).astype(np.complex64)

    def build(tf: Any) -> Any:
        a, b = tf.constant(re), tf.constant(im)
        z = tf.complex(a, b)
        loss = tf.reduce_sum(tf.real(z * w)) + tf.reduce_sum(tf.imag(z) * 2.0) + tf.reduce_sum(tf.angle(z) * a)
        return tf.gradients(loss, [a, b])

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_complex_errors(tf1: Any) -> None:
    for tf in (tf1, __import__("flowlab")):
        with tf.Graph().as_default():
            with pytest.raises(TypeError):
                tf.complex(tf.constant(1.0), tf.constant(1.0, tf.float64))
            with pytest.raises(TypeError):
                tf.complex(tf.constant(1), tf.constant(1))


_FFTS = {"fft": lambda tf: tf.fft, "ifft": lambda tf: tf.ifft, "fft2d": lambda tf: tf.fft2d,
         "ifft2d": lambda tf: tf.ifft2d, "fft3d": lambda tf: tf.fft3d, "ifft3d": lambda tf: tf.ifft3d}


@pytest.mark.parametrize("name,rank", [("fft", 1), ("ifft", 1), ("fft2d", 2), ("ifft2d", 2), ("fft3d", 3),
                                       ("ifft3d", 3)])
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_fft(tf1: Any, name: str, rank: int, dt: Any) -> None:
    x = (RS.randn(2, 3, 4, 5) + 1j * RS.randn(2, 3, 4, 5)).astype(dt)
    w = (RS.randn(2, 3, 4, 5) + 1j * RS.randn(2, 3, 4, 5)).astype(dt)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        y = _FFTS[name](tf)(xt)
        return [y, tf.gradients(tf.real(tf.reduce_sum(y * w)), xt)]

    tol = 1e-4 if dt == np.complex64 else 1e-10
    assert_same(tf1, build, rtol=tol, atol=tol)


def test_fft_rank_error(tf1: Any) -> None:
    assert_same_error(tf1, lambda tf: tf.fft2d(tf.constant([1 + 1j], tf.complex64)))


def test_space_to_depth_and_back(tf1: Any) -> None:
    x = RS.randn(2, 4, 6, 3).astype(np.float32)
    w = RS.randn(2, 2, 3, 12).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        s = tf.space_to_depth(xt, 2)
        d = tf.depth_to_space(s, 2)
        n = tf.nn.space_to_depth(tf.constant(np.arange(16, dtype=np.int64).reshape(1, 4, 4, 1)), 2)
        m = tf.nn.depth_to_space(n, 2)
        return [s, d, n, m, tf.gradients(tf.reduce_sum(s * w), xt),
                tf.gradients(tf.reduce_sum(tf.depth_to_space(tf.tile(xt, [1, 1, 1, 4]), 2) ** 2), xt)]

    assert_same(tf1, build)


@pytest.mark.parametrize("build", [
    lambda tf: tf.space_to_depth(tf.zeros([1, 5, 4, 1]), 2),
    lambda tf: tf.depth_to_space(tf.zeros([1, 5, 4, 3]), 2),
    lambda tf: tf.space_to_depth(tf.zeros([1, 4, 4, 1]), 1),
    lambda tf: tf.space_to_depth(tf.zeros([4, 4, 1]), 2),
])
def test_space_to_depth_errors(tf1: Any, build: Any) -> None:
    e, a = assert_same_error(tf1, build)
    assert str(a).split(" for ")[0].split(" (")[0] in str(e)


def test_space_to_batch_v1(tf1: Any) -> None:
    x = RS.randn(1, 4, 4, 2).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        s = tf.space_to_batch(xt, [[1, 1], [0, 2]], block_size=2)
        b = tf.batch_to_space(s, [[1, 1], [0, 2]], 2)
        n = tf.nn.space_to_batch(xt, [[0, 0], [0, 0]], 2)
        return [s, b, n, tf.gradients(tf.reduce_sum(s * s), xt), tf.constant(str(s.shape))]

    assert_same(tf1, build)
