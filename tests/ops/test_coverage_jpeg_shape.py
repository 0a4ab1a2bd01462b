"""tf.image.extract_jpeg_shape / tf.io.extract_jpeg_shape on JPEGs TensorFlow encoded
(grayscale, RGB, progressive-free), and its error for non-JPEG bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(22)


def test_extract_jpeg_shape(tf1: Any) -> None:
    with tf1.Graph().as_default(), tf1.Session() as s:
        rgb = s.run(tf1.image.encode_jpeg((RS.rand(13, 21, 3) * 255).astype(np.uint8)))
        gray = s.run(tf1.image.encode_jpeg((RS.rand(40, 7, 1) * 255).astype(np.uint8), quality=50))

    def build(tf: Any) -> Any:
        return [tf.image.extract_jpeg_shape(rgb), tf.io.extract_jpeg_shape(gray, output_type=tf.int64)]

    assert_same(tf1, build)
    e, a = assert_same_error(tf1, lambda tf: tf.image.extract_jpeg_shape(b"not a jpeg at all"))
    assert "Invalid JPEG data, size 17" in e.message and "Invalid JPEG data, size 17" in a.message
