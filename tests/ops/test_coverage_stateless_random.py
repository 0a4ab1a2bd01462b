"""tf.random.stateless_uniform / stateless_normal / stateless_truncated_normal: the
exact values TensorFlow draws for a seed pair, in each dtype."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_stateless_floats(tf1: Any, dt: str) -> None:
    def build(tf: Any) -> Any:
        d = getattr(tf, dt)
        return [tf.random.stateless_uniform([3, 5], seed=[1, 2], dtype=d),
                tf.random.stateless_uniform([7], seed=tf.constant([123, -9], tf.int64), minval=-2.0, maxval=3.0,
                                            dtype=d),
                tf.random.stateless_normal([4, 3], seed=[5, 6], mean=1.0, stddev=2.0, dtype=d),
                tf.random.stateless_truncated_normal([2, 9], seed=[7, 8], dtype=d)]

    assert_same(tf1, build, rtol=0, atol=0)


def test_stateless_ints(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [tf.random.stateless_uniform([10], seed=[3, 4], minval=-5, maxval=17, dtype=tf.int32),
                tf.random.stateless_uniform([2, 3], seed=[0, 0], minval=0, maxval=2**40, dtype=tf.int64)]

    assert_same(tf1, build)


def test_same_seed_same_values(tf1: Any) -> None:
    import flowlab as fl

    with fl.Graph().as_default(), fl.Session() as s:
        a = fl.random.stateless_normal([5], seed=[1, 1])
        b = fl.random.stateless_normal([5], seed=[1, 1])
        x, y, z = s.run([a, b, a])
    np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(x, z)
