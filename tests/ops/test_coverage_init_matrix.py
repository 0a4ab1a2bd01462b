"""tf.orthogonal_initializer / tf.initializers.orthogonal and tf.initializers.identity:
seeded values, dtypes and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


@pytest.mark.parametrize("shape", [[4, 3], [3, 5], [2, 3, 4], [5, 5]])
def test_orthogonal(tf1: Any, shape: list[int]) -> None:
    def build(tf: Any) -> Any:
        tf.set_random_seed(7)
        a = tf.get_variable("a", shape, initializer=tf.orthogonal_initializer(seed=3))
        b = tf.get_variable("b", shape, initializer=tf.initializers.orthogonal(gain=2.0, seed=4),
                            dtype=tf.float64)
        c = tf.orthogonal_initializer(seed=1)(shape)
        return [a, b, c]

    got = assert_same(tf1, build, rtol=1e-5, atol=1e-5)
    flat = np.asarray(got[0]).reshape(-1, shape[-1])
    small = min(flat.shape)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_identity(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        a = tf.get_variable("a", [3, 3], initializer=tf.initializers.identity())
        b = tf.get_variable("b", [2, 4], initializer=tf.initializers.identity(gain=0.5), dtype=tf.float64)
        return [a, b]

    assert_same(tf1, build)


def test_errors(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match=r"at least two-dimensional. Received shape=\[3\]"):
                tf.orthogonal_initializer()([3])
            with pytest.raises(ValueError, match=r"two-dimensional. Received shape=\[2, 2, 2\]"):
                tf.initializers.identity()([2, 2, 2])
