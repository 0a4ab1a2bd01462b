"""tf.image.adjust_jpeg_quality / random_jpeg_quality: the JPEG round trip's values
(uint8 and float images, fixed and tensor qualities, seeded random quality) and the
range errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

RS = np.random.RandomState(23)
U8 = (RS.rand(16, 24, 3) * 255).astype(np.uint8)
GRAY = (RS.rand(9, 13, 1) * 255).astype(np.uint8)


def test_adjust_jpeg_quality(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        f = tf.image.convert_image_dtype(tf.constant(U8), tf.float32)
        q = tf.placeholder(tf.int32, [])
        return [tf.image.adjust_jpeg_quality(U8, 30), tf.image.adjust_jpeg_quality(f, q),
                tf.image.adjust_jpeg_quality(GRAY, 90)], {q: 75}

    assert_same(tf1, build, rtol=1e-6, atol=1e-6)


def test_random_jpeg_quality(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        tf.set_random_seed(4)
        return tf.image.random_jpeg_quality(U8, 20, 80, seed=2)

    assert_same(tf1, build)
    for tf in (tf1, fl):
        with pytest.raises(ValueError, match="between 0 and 100"):
            tf.image.random_jpeg_quality(U8, 20, 180)
        with pytest.raises(ValueError, match="must be less than"):
            tf.image.random_jpeg_quality(U8, 50, 50)
