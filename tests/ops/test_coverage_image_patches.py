"""tf.extract_image_patches / tf.image.extract_image_patches / tf.image.extract_patches:
values, static shapes, gradients and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(13)


@pytest.mark.parametrize("k,s,r,pad", [([1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
                                       ([1, 3, 2, 1], [1, 2, 3, 1], [1, 1, 1, 1], "SAME"),
                                       ([1, 2, 3, 1], [1, 1, 2, 1], [1, 2, 1, 1], "VALID"),
                                       ([1, 3, 3, 1], [1, 2, 2, 1], [1, 2, 2, 1], "SAME")])
def test_extract_image_patches(tf1: Any, k: list[int], s: list[int], r: list[int], pad: str) -> None:
    x = RS.randn(2, 7, 8, 3).astype(np.float32)
    w = None

    def build(tf: Any) -> Any:
        nonlocal w
        xt = tf.constant(x)
        p = tf.extract_image_patches(xt, k, s, r, pad)
        if w is None:
            w = RS.randn(*p.shape.as_list()).astype(np.float32)
        q = tf.image.extract_patches(xt, k, s, r, pad)
        z = tf.image.extract_image_patches(tf.constant(np.arange(2 * 5 * 4).reshape(2, 5, 4, 1)), k, s, r, pad)
        return [p, q, z, tf.gradients(tf.reduce_sum(p * w), xt), tf.constant(str(p.shape))]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_errors(tf1: Any) -> None:
    assert_same_error(tf1, lambda tf: tf.extract_image_patches(tf.zeros([2, 3, 3]), [1, 2, 2, 1], [1, 1, 1, 1],
                                                               [1, 1, 1, 1], "VALID"))
