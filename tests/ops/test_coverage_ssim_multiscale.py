"""tf.image.ssim_multiscale: values, dtypes and gradients (odd sizes take the SYMMETRIC
padding branch), differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.difftest import assert_same

RS = np.random.RandomState(21)


def test_ssim_multiscale(tf1: Any) -> None:
    a = RS.rand(1, 181, 178, 3).astype(np.float32)
    b = np.clip(a + RS.randn(*a.shape).astype(np.float32) * 0.05, 0, 1)
    u = (RS.rand(2, 176, 176, 1) * 255).astype(np.uint8)

    def build(tf: Any) -> Any:
        x, y = tf.constant(a), tf.constant(b)
        m = tf.image.ssim_multiscale(x, y, 1.0)
        m2 = tf.image.ssim_multiscale(tf.constant(u), tf.constant(u[::-1]), 255, power_factors=(0.5, 0.3, 0.2))
        return [m, m2, tf.gradients(m, x)]

    assert_same(tf1, build, rtol=1e-4, atol=1e-5)
