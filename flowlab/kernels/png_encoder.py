"""PNG encoding of 8-bit images, byte for byte as TensorFlow's `png::WriteImageToBuffer`.

TensorFlow's ImageSummary encodes with libpng 1.6 at zlib's default level, memory
level 9 and no filter request, so libpng applies its defaults; reproducing them is
what makes flowlab's images the same bytes as TensorFlow's:

- every row gets the filter (None, Sub, Up, Average, Paeth -- first wins ties) whose
  bytes, read as signed, have the smallest sum of absolute values (libpng's
  heuristic; the row above the first is zeros);
- the filtered rows are deflated with the Z_FILTERED strategy, with the window
  shrunk to the smallest power of two that holds the image plus 262 bytes when
  the image is at most 16 KiB (never below 2^9), and the zlib header's window field
  then lowered to the smallest one that holds the image (libpng's optimize_cmf);
- the stream is cut into IDAT chunks of 8192 bytes; the file is signature, IHDR,
  IDATs, IEND and nothing else.

Pillow cannot be told to do the last two (it keeps a 32 KiB window and larger
chunks), hence this module, which uses only the standard library's zlib.
Everything here is a pure function of the pixels: no state.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["encode_png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> gray, gray+alpha, RGB, RGBA
_IDAT_SIZE = 8192


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _filter_rows(img: np.ndarray, bpp: int) -> bytes:
    """Rows of `img` (height x row bytes, uint8) each prefixed by libpng's chosen filter."""
    x = img.astype(np.int16)
    a = np.zeros_like(x)
    a[:, bpp:] = x[:, :-bpp]  # left neighbour
    b = np.zeros_like(x)
    b[1:] = x[:-1]  # above
    c = np.zeros_like(x)
    c[1:, bpp:] = x[:-1, :-bpp]  # above-left
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    candidates = np.stack([x, x - a, x - b, x - ((a + b) >> 1), x - paeth]) & 0xFF
    signed = np.where(candidates < 128, candidates, 256 - candidates)
    best = np.argmin(signed.sum(axis=2, dtype=np.int64), axis=0)  # first minimum on ties
    rows = candidates[best, np.arange(x.shape[0])].astype(np.uint8)
    return np.concatenate([best.astype(np.uint8)[:, None], rows], axis=1).tobytes()


def _window_bits(data_size: int) -> int:
    bits = 15
    if data_size <= 16384:
        half = 1 << (bits - 1)
        while data_size + 262 <= half:
            half >>= 1
            bits -= 1
    return max(bits, 9)  # zlib refuses 8 for a zlib stream; libpng uses 9 as well


def _optimize_cmf(stream: bytearray, data_size: int) -> None:
    if data_size > 16384:
        return
    cmf = stream[0]
    if (cmf & 0x0F) != 8 or (cmf & 0xF0) > 0x70:
        return
    cinfo = cmf >> 4
    half = 1 << (cinfo + 7)
    if data_size <= half:
        while True:
            half >>= 1
            cinfo -= 1
            if not (cinfo > 0 and data_size <= half):
                break
        cmf = (cmf & 0x0F) | (cinfo << 4)
        stream[0] = cmf
        flg = stream[1] & 0xE0
        flg += 0x1F - ((cmf << 8) + flg) % 0x1F
        stream[1] = flg


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of a `[height, width, channels]` uint8 array (channels 1-4), as
    TensorFlow's ImageSummary writes them.

        encode_png(np.zeros((2, 3, 3), np.uint8))[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    """
    image = np.ascontiguousarray(image, dtype=np.uint8)
    if image.ndim != 3 or image.shape[2] not in _COLOR_TYPE:
        raise ValueError(f"encode_png expects [height, width, 1-4 channels], got shape {image.shape}")
    h, w, depth = image.shape
    rows = image.reshape(h, w * depth)
    raw = _filter_rows(rows, depth) if h and w else b""
    data_size = (w * depth + 1) * h
    z = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, _window_bits(data_size), 9,
                         zlib.Z_FILTERED)
    stream = bytearray(z.compress(raw) + z.flush())
    _optimize_cmf(stream, data_size)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPE[depth], 0, 0, 0)
    idats = b"".join(_chunk(b"IDAT", bytes(stream[i : i + _IDAT_SIZE]))
                     for i in range(0, len(stream), _IDAT_SIZE))
    return _SIGNATURE + _chunk(b"IHDR", ihdr) + idats + _chunk(b"IEND", b"")
