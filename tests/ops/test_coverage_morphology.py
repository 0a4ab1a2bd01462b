"""tf.nn.dilation2d and tf.nn.erosion2d: values, static shapes and gradients,
differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same

RS = np.random.RandomState(19)


@pytest.mark.parametrize("strides,rates,padding", [([1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
                                                   ([1, 2, 1, 1], [1, 1, 1, 1], "SAME"),
                                                   ([1, 1, 2, 1], [1, 2, 2, 1], "SAME"),
                                                   ([1, 2, 2, 1], [1, 1, 2, 1], "VALID")])
def test_dilation_erosion(tf1: Any, strides: list[int], rates: list[int], padding: str) -> None:
    x = RS.randn(2, 7, 6, 3).astype(np.float32)
    k = RS.randn(3, 2, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        xt, kt = tf.constant(x), tf.constant(k)
        d = tf.nn.dilation2d(xt, kt, strides, rates, padding)
        e = tf.nn.erosion2d(xt, kt, strides, rates, padding)
        w = tf.constant(np.linspace(-1, 1, int(np.prod(d.shape.as_list()))).reshape(d.shape.as_list()), tf.float32)
        return [d, e, tf.gradients(tf.reduce_sum(d * w) + tf.reduce_sum(e * e), [xt, kt]),
                tf.constant(str(d.shape))]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)
