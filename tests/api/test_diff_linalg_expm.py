"""`tf.linalg.expm` beside TensorFlow 1.x (tests/difftest.py): every Padé order and
some squarings in both precisions, batches, a non-finite input, and the gradient."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same

RS = np.random.RandomState(13)
BASE = RS.randn(3, 3)
# l1 norms from 0.005 to 40: each approximant, and up to a few squarings.
SCALES = [0.002, 0.05, 0.2, 0.6, 1.2, 3.0, 15.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expm(tf1: Any, dtype: type) -> None:
    mats = np.stack([BASE * s for s in SCALES]).astype(dtype)

    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.as_dtype(dtype), [None, 3, 3])
        batched = tf.constant(mats.reshape(7, 1, 3, 3))
        return [tf.linalg.expm(x), tf.linalg.expm(batched), tf.linalg.expm(mats[2])], {x: mats}

    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert_same(tf1, build, rtol=tol, atol=tol)


def test_expm_non_finite_and_empty(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        bad = tf.constant([[np.inf, 0.0], [0.0, 1.0]])
        return [tf.linalg.expm(bad), tf.linalg.expm(tf.zeros([2, 0, 0]))]

    assert_same(tf1, build)


def test_expm_gradient(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant(BASE * 0.7)
        y = tf.linalg.expm(x)
        return tf.gradients(tf.reduce_sum(y * tf.constant(BASE)), x)

    assert_same(tf1, build, rtol=1e-9, atol=1e-9)
