"""JPEG decoding as TensorFlow's libjpeg-turbo settings give it, through Pillow.

TensorFlow decodes with libjpeg's fast integer IDCT (dct_method '' or INTEGER_FAST)
and fancy (triangle-filter) chroma upsampling by default.  Pillow exposes two of
libjpeg's configurations: its default (accurate IDCT, fancy upsampling) and its
"draft" one (fast IDCT, no fancy upsampling).  The default TensorFlow decode is
rebuilt from the draft one: decoded to YCbCr without fancy upsampling, the chroma
planes are exactly the subsampled ones repeated, so they are read back, upsampled
with libjpeg's integer fancy filters (h2v1, h2v2, h1v2: 3/4 nearer + 1/4 further, its
rounding biases, edge rows and columns replicated; widths of 2 or less replicated as
libjpeg does) and converted to RGB with libjpeg's fixed-point YCbCr tables.

Configurations, by (fancy_upscaling, fast IDCT):
  (True, True)   draft YCbCr + the upsampling and colour conversion here
  (False, True)  draft RGB (libjpeg's merged upsampler), as is
  (True, False)  Pillow's default, as is
  (False, False) not available from Pillow: Pillow's default is used (fancy
                 upsampling), which can differ from TensorFlow by a level or two
Other sampling layouts than those above fall back to the accurate decode.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

_SCALEBITS = 16
_ONE_HALF = 1 << (_SCALEBITS - 1)


def _fix(x: float) -> int:
    return int(x * (1 << _SCALEBITS) + 0.5)


_X = np.arange(256, dtype=np.int64) - 128
_CR_R = (_fix(1.40200) * _X + _ONE_HALF) >> _SCALEBITS
_CB_B = (_fix(1.77200) * _X + _ONE_HALF) >> _SCALEBITS
_CR_G = -_fix(0.71414) * _X
_CB_G = -_fix(0.34414) * _X + _ONE_HALF


def ycc_to_rgb(y: np.ndarray, cb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    """libjpeg's ycc_rgb_convert on uint8 planes."""
    yi = y.astype(np.int64)
    r = yi + _CR_R[cr]
    g = yi + ((_CB_G[cb] + _CR_G[cr]) >> _SCALEBITS)
    b = yi + _CB_B[cb]
    return np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.uint8)


def _fancy_h2(plane: np.ndarray, bias_near: int, bias_far: int, shift: int) -> np.ndarray:
    """Horizontal doubling of int64 column sums `plane`:
    out[2j] = (3 p[j] + p[j-1] + bias_near) >> shift, out[2j+1] = (3 p[j] + p[j+1] + bias_far) >> shift,
    the first and last outputs (4 p + bias) >> shift (libjpeg's special cases)."""
    left = np.concatenate([plane[:, :1], plane[:, :-1]], axis=1)
    right = np.concatenate([plane[:, 1:], plane[:, -1:]], axis=1)
    even = (plane * 3 + left + bias_near) >> shift
    odd = (plane * 3 + right + bias_far) >> shift
    even[:, 0] = (plane[:, 0] * 4 + bias_near) >> shift
    odd[:, -1] = (plane[:, -1] * 4 + bias_far) >> shift
    out = np.empty((plane.shape[0], plane.shape[1] * 2), dtype=np.int64)
    out[:, 0::2], out[:, 1::2] = even, odd
    return out


def upsample(plane: np.ndarray, h: int, v: int) -> np.ndarray | None:
    """libjpeg's fancy upsampling of a subsampled uint8 plane by (h, v); None if libjpeg
    would use another method than those implemented here."""
    p = plane.astype(np.int64)
    width = p.shape[1]
    if (h, v) == (1, 1):
        return plane
    if (h, v) == (2, 1):
        if width <= 2:
            return np.repeat(plane, 2, axis=1)
        # h2v1: (3 * nearer + further + 1 or 2) >> 2; the edge pixels are copied.
        left = np.concatenate([p[:, :1], p[:, :-1]], axis=1)
        right = np.concatenate([p[:, 1:], p[:, -1:]], axis=1)
        even = (p * 3 + left + 1) >> 2
        odd = (p * 3 + right + 2) >> 2
        even[:, 0], odd[:, -1] = p[:, 0], p[:, -1]
        out = np.empty((p.shape[0], width * 2), dtype=np.int64)
        out[:, 0::2], out[:, 1::2] = even, odd
        return out.astype(np.uint8)
    if (h, v) == (1, 2):
        above = np.concatenate([p[:1], p[:-1]], axis=0)
        below = np.concatenate([p[1:], p[-1:]], axis=0)
        out = np.empty((p.shape[0] * 2, width), dtype=np.int64)
        out[0::2] = (p * 3 + above + 1) >> 2
        out[1::2] = (p * 3 + below + 2) >> 2
        return out.astype(np.uint8)
    if (h, v) == (2, 2):
        if width <= 2:
            return np.repeat(np.repeat(plane, 2, axis=0), 2, axis=1)
        above = np.concatenate([p[:1], p[:-1]], axis=0)
        below = np.concatenate([p[1:], p[-1:]], axis=0)
        out = np.empty((p.shape[0] * 2, width * 2), dtype=np.int64)
        out[0::2] = _fancy_h2(p * 3 + above, 8, 7, 4)
        out[1::2] = _fancy_h2(p * 3 + below, 8, 7, 4)
        return out.astype(np.uint8)
    return None


def _open(data: bytes) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(data))


def decode(data: bytes, gray: bool, fancy: bool, fast: bool) -> np.ndarray:
    """[h, w, 1 or 3] uint8 as TensorFlow's DecodeJpeg (see the module docstring)."""
    im = _open(data)
    components = len(getattr(im, "layer", [])) or (1 if im.mode == "L" else 3)
    if not fast:
        if gray:
            im.draft("L", im.size)
        im.load()
        return _as_hwc(im, gray)
    if gray or components == 1:
        im.draft("L", im.size)
        im.decoderconfig = (1, 1)  # libjpeg's fast IDCT (Pillow's "draft" decode)
        im.load()
        return _as_hwc(im, True)
    if not fancy:
        im.decoderconfig = (1, 1)
        im.load()
        return _as_hwc(im, False)
    factors = [(h, v) for _, h, v, _ in im.layer]
    hmax, vmax = max(f[0] for f in factors), max(f[1] for f in factors)
    chroma = {(hmax // h, vmax // v) for h, v in factors[1:]}
    if im.mode != "RGB" or len(factors) != 3 or factors[0] != (hmax, vmax) or len(chroma) != 1:
        accurate = _open(data)
        accurate.load()
        return _as_hwc(accurate, False)
    (sh, sv), = chroma
    im.draft("YCbCr", im.size)
    im.decoderconfig = (1, 1)
    im.load()
    ycc = np.asarray(im)
    height, width = ycc.shape[:2]
    planes = []
    for c in (1, 2):
        sub = ycc[::sv, ::sh, c]  # the replicated chroma, read back at its own resolution
        up = upsample(sub, sh, sv)
        if up is None:
            accurate = _open(data)
            accurate.load()
            return _as_hwc(accurate, False)
        planes.append(up[:height, :width])
    return ycc_to_rgb(ycc[..., 0], planes[0], planes[1])


def _as_hwc(im: Any, gray: bool) -> np.ndarray:
    if gray and im.mode != "L":
        im = im.convert("L")
    elif not gray and im.mode not in ("L", "RGB"):
        im = im.convert("RGB")
    arr = np.asarray(im)
    return arr[..., None] if arr.ndim == 2 else arr
