"""tf.math.erfinv / ndtri / erfcinv / bessel_i0 / bessel_i1 / nextafter: values, dtypes
and gradients, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same

RS = np.random.RandomState(10)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_inverse_error_functions(tf1: Any, dt: Any) -> None:
    x = np.array([-0.999, -0.7, -0.1, 0.0, 1e-6, 0.3, 0.95], dt)
    p = np.array([1e-6, 0.01, 0.2, 0.5, 0.8, 0.999], dt)
    c = np.array([0.01, 0.5, 1.0, 1.5, 1.99], dt)

    def build(tf: Any) -> Any:
        xt, pt, ct = tf.constant(x), tf.constant(p), tf.constant(c)
        e, n, ec = tf.math.erfinv(xt), tf.math.ndtri(pt), tf.math.erfcinv(ct)
        edge = [tf.math.erfinv(tf.constant([1.0, -1.0, 1.5], dt)), tf.math.ndtri(tf.constant([0.0, 1.0, -0.5], dt))]
        return [e, n, ec, *edge, tf.gradients(tf.reduce_sum(e) + tf.reduce_sum(n * n) + tf.reduce_sum(ec), [xt, pt, ct])]

    tol = 2e-5 if dt == np.float32 else 1e-10
    assert_same(tf1, build, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_bessel(tf1: Any, dt: Any) -> None:
    x = np.array([-5.0, -1.0, 0.0, 0.3, 2.0, 10.0], dt)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        a, b = tf.math.bessel_i0(xt), tf.math.bessel_i1(xt)
        return [a, b, tf.gradients(tf.reduce_sum(a) + tf.reduce_sum(b * 2.0), xt)]

    tol = 1e-5 if dt == np.float32 else 1e-10
    assert_same(tf1, build, rtol=tol, atol=tol)


def test_nextafter(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [tf.math.nextafter(tf.constant([1.0, 0.0, -2.0, 3.0]), tf.constant([2.0, -1.0, -2.0, 0.0])),
                tf.math.nextafter(tf.constant([1.0], tf.float64), tf.constant([[0.0], [5.0]], tf.float64))]

    assert_same(tf1, build, rtol=0, atol=0)
