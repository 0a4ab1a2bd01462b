"""A PNG reader for what Pillow cannot give exactly: 16-bit colour images.

Pillow keeps only the high byte of 16-bit RGB, RGBA and gray+alpha PNGs; TensorFlow
decodes them to uint16.  This reads non-interlaced PNGs of bit depth 16 (colour types
2, 4 and 6): the IDAT stream inflated, each row unfiltered (None, Sub, Up, Average,
Paeth, over bytes with the pixel's byte count as the left distance), the samples read
big-endian.  Interlaced ones raise UnimplementedError.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from flowlab import errors

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def header(data: bytes) -> tuple[int, int, int, int, int]:
    """(width, height, bit depth, colour type, interlace) from the IHDR chunk."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise errors.InvalidArgumentError(None, None, "Invalid PNG header")
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", data[16:29])
    return w, h, depth, ctype, interlace


def _idat(data: bytes) -> bytes:
    pos, parts = 8, []
    while pos + 8 <= len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            parts.append(data[pos + 8:pos + 8 + n])
        elif kind == b"IEND":
            break
        pos += 12 + n
    return b"".join(parts)


def _paeth(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def read_16bit(data: bytes) -> np.ndarray:
    """[height, width, channels] uint16 samples of a 16-bit PNG."""
    w, h, depth, ctype, interlace = header(data)
    if depth != 16 or ctype not in _CHANNELS:
        raise errors.InvalidArgumentError(None, None, f"not a 16-bit gray/colour PNG (depth {depth}, type {ctype})")
    if interlace:
        raise errors.UnimplementedError(None, None, "flowlab does not decode interlaced 16-bit PNGs")
    bpp = 2 * _CHANNELS[ctype]
    stride = w * bpp
    try:
        raw = np.frombuffer(zlib.decompress(_idat(data)), dtype=np.uint8)
    except zlib.error as e:
        raise errors.InvalidArgumentError(None, None, f"Invalid PNG data: {e}") from None
    if raw.size < h * (stride + 1):
        raise errors.InvalidArgumentError(None, None, "Invalid PNG data: truncated image")
    rows = raw[:h * (stride + 1)].reshape(h, stride + 1)
    out = np.zeros((h, stride), dtype=np.int64)
    prior = np.zeros(stride, dtype=np.int64)
    for y in range(h):
        kind, f = int(rows[y, 0]), rows[y, 1:].astype(np.int64)
        if kind == 0:
            cur = f
        elif kind == 2:
            cur = (f + prior) & 0xFF
        elif kind in (1, 3, 4):
            cur = np.zeros(stride, dtype=np.int64)
            for x in range(0, stride, bpp):
                left = cur[x - bpp:x] if x else np.zeros(bpp, dtype=np.int64)
                up = prior[x:x + bpp]
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up) >> 1
                else:
                    upleft = prior[x - bpp:x] if x else np.zeros(bpp, dtype=np.int64)
                    pred = _paeth(left, up, upleft)
                cur[x:x + bpp] = (f[x:x + bpp] + pred) & 0xFF
        else:
            raise errors.InvalidArgumentError(None, None, f"Invalid PNG data: filter type {kind}")
        out[y] = cur
        prior = cur
    samples = out.astype(np.uint8).reshape(h, w * bpp // 2, 2)
    return (samples[..., 0].astype(np.uint16) << 8 | samples[..., 1]).reshape(h, w, _CHANNELS[ctype])
