"""Kernels of AdjustContrastv2 and ClipByValue, written over `ctx.xp`.

AdjustContrastv2 for float32 follows TensorFlow's CPU kernel step for step so its
float32 rounding is TensorFlow's: the per-channel sum over an image's pixels folds
the pixel array in halves (the right half added onto the left, an odd middle pixel
copied on the first round) until one pixel row remains, the mean is that sum times
float32(1 / pixels), and output = mean + factor * (x - mean).  float16 computes in
float32 and rounds once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel


def _folded_mean(xp: Any, x: Any) -> Any:
    """[batch, pixels, channels] float32 -> [batch, 1, channels] mean, TF's fold order."""
    remaining = x.shape[1]
    acc = None
    while True:
        right = remaining // 2
        left = remaining - right
        if acc is None:
            acc = xp.empty_like(x[:, :left])
            acc[:, :right] = x[:, left:left + right] + x[:, :right]
            if left > right:
                acc[:, right] = x[:, right]
        else:
            acc[:, :right] += acc[:, left:left + right]
        remaining = left
        if remaining <= 1:
            break
    return acc[:, :1] * np.float32(1.0 / x.shape[1])


@kernel("AdjustContrastv2")
def adjust_contrast_v2(ctx: Any, images: Any, factor: Any) -> Any:
    xp = ctx.xp
    if images.ndim < 3:
        raise errors.InvalidArgumentError(None, None, f"input must be at least 3-D, got shape{list(images.shape)}")
    if np.ndim(factor) != 0:
        raise errors.InvalidArgumentError(None, None, f"contrast_factor must be scalar: {list(np.shape(factor))}")
    shape = images.shape
    h, w, c = shape[-3:]
    if images.size == 0:
        return images.copy()
    x = images.astype(np.float32, copy=False).reshape(-1, h * w, c)
    mean = _folded_mean(xp, x)
    out = mean + np.float32(float(factor)) * (x - mean)  # float(): a device scalar too
    return out.reshape(shape).astype(images.dtype, copy=False)


@kernel("ClipByValue")
def clip_by_value(ctx: Any, t: Any, lo: Any, hi: Any) -> Any:
    xp = ctx.xp
    for name, b in (("clip_value_min", lo), ("clip_value_max", hi)):
        if np.ndim(b) != 0 and tuple(np.shape(b)) != tuple(t.shape):
            raise errors.InvalidArgumentError(
                None, None, f"{name} and t must have the same shape, or {name} must be a scalar. "
                f"t shape: {list(t.shape)} {name} shape: {list(np.shape(b))}")
    return xp.minimum(xp.maximum(t, lo), hi).astype(t.dtype, copy=False)
