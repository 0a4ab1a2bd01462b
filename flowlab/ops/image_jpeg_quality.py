"""`tf.image.adjust_jpeg_quality` and `tf.image.random_jpeg_quality`: an image made
uint8 (saturating), JPEG-encoded at a quality (EncodeJpegVariableQuality; the random
one draws it with random_uniform over [min, max)), decoded again and converted back
to the input's dtype, as TensorFlow builds it.  Not differentiable (the codec ops are
not)."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops.builder import apply_op, convert_to_tensor

__all__ = ["adjust_jpeg_quality", "random_jpeg_quality"]


def adjust_jpeg_quality(image: Any, jpeg_quality: Any, dct_method: str = "", name: str | None = None) -> Tensor:
    """`image` after a JPEG round trip at `jpeg_quality` (0..100, an int or tensor)."""
    from flowlab.ops.image_adjust import convert_image_dtype
    from flowlab.ops.image_codecs import decode_jpeg

    with get_default_graph().name_scope(name or "adjust_jpeg_quality"):
        image = convert_to_tensor(image, name="image")
        channels = image.shape.as_list()[-1]
        orig = image.dtype.base_dtype
        image = convert_image_dtype(image, dtypes.uint8, saturate=True)
        quality = convert_to_tensor(jpeg_quality, dtype=dtypes.int32)
        encoded = apply_op("EncodeJpegVariableQuality", images=image, quality=quality,
                           name="EncodeJpegVariableQuality")
        image = decode_jpeg(encoded, channels=channels, dct_method=dct_method)
        return convert_image_dtype(image, orig, saturate=True)


def random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int, seed: int | None = None) -> Tensor:
    """adjust_jpeg_quality at a quality drawn uniformly from [min, max).

    Raises:
      ValueError: for a range outside [0, 100] or an empty one.
    """
    from flowlab.ops.random_ops import random_uniform

    if not (0 <= min_jpeg_quality <= 100 and 0 <= max_jpeg_quality <= 100):
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    quality = random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed, dtype=dtypes.int32)
    return adjust_jpeg_quality(image, quality)
