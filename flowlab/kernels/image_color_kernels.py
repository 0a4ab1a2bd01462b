"""Kernels of RGBToHSV, HSVToRGB, AdjustHue and AdjustSaturation, vectorized over pixels.

Each follows TensorFlow's CPU kernel operation for operation in float32 so the
results round alike: RGBToHSV/HSVToRGB are TensorFlow's Eigen expressions
(colorspace_op.h); AdjustHue goes through TensorFlow's hue-and-value-range form
(hue in [0, 6), the six orderings of r, g, b), AdjustSaturation through its scalar
rgb_to_hsv / hsv_to_rgb (where `+ 2.0 / 6.0` is a double addition rounded to float).
float64 (RGBToHSV, HSVToRGB) computes in float64; float16 in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_F32 = np.float32


def _rgb(images: Any, op: str) -> tuple[Any, Any, Any]:
    if images.ndim < 1 or images.shape[-1] != 3:
        raise errors.InvalidArgumentError(
            None, None, f"input must have 3 channels but input only has {images.shape[-1] if images.ndim else 0} channels.")
    return images[..., 0], images[..., 1], images[..., 2]


def _work_dtype(dt: Any) -> Any:
    return np.float64 if dt == np.float64 else _F32


@kernel("RGBToHSV", devices=CPU)
def rgb_to_hsv(ctx: Any, images: Any) -> Any:
    wt = _work_dtype(images.dtype)
    r, g, b = (c.astype(wt) for c in _rgb(images, "RGBToHSV"))
    one, zero = wt(1), wt(0)
    v = np.maximum(np.maximum(r, g), b)
    rng = v - np.minimum(np.minimum(r, g), b)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(v > zero, rng / v, zero)
        norm = (one / rng) * (one / wt(6))
        h = np.where(r == v, norm * (g - b),
                     np.where(g == v, norm * (b - r) + wt(2) / wt(6), norm * (r - g) + wt(4) / wt(6)))
    h = np.where(rng > zero, h, zero)
    h = np.where(h < zero, h + one, h)
    return np.stack([h, s, v], axis=-1).astype(images.dtype)


@kernel("HSVToRGB", devices=CPU)
def hsv_to_rgb(ctx: Any, images: Any) -> Any:
    wt = _work_dtype(images.dtype)
    h, s, v = (c.astype(wt) for c in _rgb(images, "HSVToRGB"))
    dh = h * wt(6)

    def clamp(x: Any) -> Any:
        return np.minimum(np.maximum(x, wt(0)), wt(1))

    dr = clamp(np.abs(dh - wt(3)) - wt(1))
    dg = clamp(-np.abs(dh - wt(2)) + wt(2))
    db = clamp(-np.abs(dh - wt(4)) + wt(2))
    one_s = -s + wt(1)
    out = [(d * s + one_s) * v for d in (dr, dg, db)]
    return np.stack(out, axis=-1).astype(images.dtype)


def _hv_range(r: Any, g: Any, b: Any) -> tuple[Any, Any, Any]:
    """TensorFlow's rgb_to_hv_range: hue in [0, 6), min and max of r, g, b."""
    rg = r < g
    c1, c3 = rg & (b < r), rg & ~(b < r) & (b > g)
    c2 = rg & ~c1 & ~c3
    c0, c4 = ~rg & (b < g), ~rg & ~(b < g) & (b > r)
    c5 = ~rg & ~c0 & ~c4
    vmax = np.select([c0, c1, c2, c3, c4, c5], [r, g, g, b, b, r])
    vmid = np.select([c0, c1, c2, c3, c4, c5], [g, r, b, g, r, b])
    vmin = np.select([c0, c1, c2, c3, c4, c5], [b, b, r, r, g, g])
    cat = np.select([c0, c1, c2, c3, c4, c5], [0, 1, 2, 3, 4, 5]).astype(np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (vmid - vmin) / (vmax - vmin)
    h = cat.astype(_F32) + np.where(cat % 2 == 0, ratio, _F32(1) - ratio)
    return np.where(vmax == vmin, _F32(0), h).astype(_F32), vmin, vmax


def _hv_range_to_rgb(h: Any, vmin: Any, vmax: Any) -> tuple[Any, Any, Any]:
    cat = h.astype(np.int32)  # truncation, as static_cast<int>
    ratio = h - cat.astype(_F32)
    ratio = np.where(cat % 2 == 0, ratio, _F32(1) - ratio)
    vmid = vmin + ratio * (vmax - vmin)
    conds = [cat == k for k in range(5)]
    r = np.select(conds, [vmax, vmid, vmin, vmin, vmid], vmax)
    g = np.select(conds, [vmid, vmax, vmax, vmid, vmin], vmin)
    b = np.select(conds, [vmin, vmin, vmid, vmax, vmax], vmid)
    return r, g, b


def _check_scalar(name: str, x: Any) -> None:
    if np.ndim(x) != 0:
        raise errors.InvalidArgumentError(None, None, f"{name} must be scalar: {list(np.shape(x))}")


@kernel("AdjustHue", devices=CPU)
def adjust_hue(ctx: Any, images: Any, delta: Any) -> Any:
    _check_scalar("delta", delta)
    if images.ndim < 3:
        raise errors.InvalidArgumentError(None, None, f"input must be at least 3-D, got shape{list(images.shape)}")
    r, g, b = (c.astype(_F32) for c in _rgb(images, "AdjustHue"))
    h, vmin, vmax = _hv_range(r, g, b)
    h = h + _F32(delta) * _F32(6)
    while np.any(h < 0):
        h = np.where(h < 0, h + _F32(6), h)
    while np.any(h >= 6):
        h = np.where(h >= 6, h - _F32(6), h)
    return np.stack(_hv_range_to_rgb(h, vmin, vmax), axis=-1).astype(images.dtype)


def _scalar_rgb_to_hsv(r: Any, g: Any, b: Any) -> tuple[Any, Any, Any]:
    vv = np.maximum(r, np.maximum(g, b))
    rng = vv - np.minimum(r, np.minimum(g, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(vv > 0, rng / vv, _F32(0))
        norm = _F32(1) / (_F32(6) * rng)
        hh = np.where(r == vv, norm * (g - b),
                      np.where(g == vv, (norm * (b - r)).astype(np.float64) + 2.0 / 6.0,
                               (norm * (r - g)).astype(np.float64) + 4.0 / 6.0)).astype(_F32)
    hh = np.where(rng <= 0, _F32(0), hh)
    hh = np.where(hh < 0, hh + _F32(1), hh)
    return hh, s.astype(_F32), vv


def _scalar_hsv_to_rgb(h: Any, s: Any, v: Any) -> tuple[Any, Any, Any]:
    c = s * v
    m = v - c
    dh = h * _F32(6)
    cat = dh.astype(np.int32)
    f = dh.copy()
    while np.any(f <= 0):
        f = np.where(f <= 0, f + _F32(2), f)
    while np.any(f >= 2):
        f = np.where(f >= 2, f - _F32(2), f)
    x = c * (_F32(1) - np.abs(f - _F32(1)))
    z = np.zeros_like(c)
    conds = [cat == k for k in range(6)]
    rr = np.select(conds, [c, x, z, z, x, c], z)
    gg = np.select(conds, [x, c, c, x, z, z], z)
    bb = np.select(conds, [z, z, x, c, c, x], z)
    return rr + m, gg + m, bb + m


@kernel("AdjustSaturation", devices=CPU)
def adjust_saturation(ctx: Any, images: Any, scale: Any) -> Any:
    _check_scalar("scale", scale)
    if images.ndim < 3:
        raise errors.InvalidArgumentError(None, None, f"input must be at least 3-D, got shape{list(images.shape)}")
    r, g, b = (c.astype(_F32) for c in _rgb(images, "AdjustSaturation"))
    h, s, v = _scalar_rgb_to_hsv(r, g, b)
    s = np.minimum(_F32(1), np.maximum(_F32(0), s * _F32(scale)))
    return np.stack(_scalar_hsv_to_rgb(h, s, v), axis=-1).astype(images.dtype)
