"""Kernel of ExtractJpegShape (flowlab.ops.jpeg_shape_ops): the markers after SOI are
walked to the first start-of-frame (SOF0..SOF15 but DHT, JPG and DAC), whose header
holds the height, width and component count."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_NOT_SOF = {0xC4, 0xC8, 0xCC}


def jpeg_shape(data: bytes) -> tuple[int, int, int] | None:
    if len(data) < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return None
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in _NOT_SOF:
            if i + 10 > len(data):
                return None
            h = int.from_bytes(data[i + 5:i + 7], "big")
            w = int.from_bytes(data[i + 7:i + 9], "big")
            return h, w, data[i + 9]
        if marker in (0xD9, 0xDA):
            return None
        i += 2 + length
    return None


@kernel("ExtractJpegShape", devices=CPU)
def extract_jpeg_shape(ctx: Any, contents: Any) -> Any:
    a = np.asarray(contents, dtype=object)
    if a.ndim != 0:
        raise errors.InvalidArgumentError(None, None, f"contents must be scalar, got shape {list(a.shape)}")
    data = a.item()
    data = data if isinstance(data, bytes) else str(data).encode()
    shape = jpeg_shape(data)
    if shape is None:
        raise errors.InvalidArgumentError(None, None, f"Invalid JPEG data, size {len(data)}")
    return np.array(shape, dtype=ctx.attrs["output_type"].as_numpy_dtype)
