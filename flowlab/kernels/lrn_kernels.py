"""Kernels of LRN and LRNGrad, written once over `ctx.xp`.

The window sum over channels is 2r+1 shifted slice additions on a zero-padded copy
(r = depth_radius), clipped to the channel count.  float16 computes in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel


def _window_sum(xp: Any, v: Any, r: int) -> Any:
    """sum(v[..., d - r : d + r + 1]) for every channel d (clipped at the edges)."""
    depth = v.shape[-1]
    r = min(r, depth)
    padded = xp.pad(v, [(0, 0)] * (v.ndim - 1) + [(r, r)])
    out = xp.zeros_like(v)
    for k in range(2 * r + 1):
        out += padded[..., k:k + depth]
    return out


def _check(ctx: Any, *xs: Any) -> None:
    for x in xs:
        if x.ndim != 4:
            raise errors.InvalidArgumentError(None, None, f"in must be 4-dimensional: {list(x.shape)}")
    if ctx.attrs["depth_radius"] < 0:
        raise errors.InvalidArgumentError(None, None, "depth_radius must be non-negative")


def _ct(dtype: Any) -> Any:
    return np.float32 if dtype == np.float16 else dtype


@kernel("LRN")
def lrn(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _check(ctx, x)
    a = ctx.attrs
    xc = x.astype(_ct(x.dtype), copy=False)
    norm = a["bias"] + a["alpha"] * _window_sum(xp, xc * xc, a["depth_radius"])
    return (xc * norm ** -a["beta"]).astype(x.dtype, copy=False)


@kernel("LRNGrad")
def lrn_grad(ctx: Any, dy: Any, x: Any, y: Any) -> Any:
    xp = ctx.xp
    _check(ctx, dy, x, y)
    if not (dy.shape == x.shape == y.shape):
        raise errors.InvalidArgumentError(
            None, None, "input_grads, input_image, and out_image should have the same shape")
    a = ctx.attrs
    ct = _ct(x.dtype)
    dyc, xc, yc = (t.astype(ct, copy=False) for t in (dy, x, y))
    r = a["depth_radius"]
    norm = a["bias"] + a["alpha"] * _window_sum(xp, xc * xc, r)
    # d out[j] / d x[k] = [j == k] norm_j^-beta - 2 alpha beta x[k] out[j] / norm_j, for |j - k| <= r
    scaled = dyc * yc / norm
    dx = dyc * norm ** -a["beta"] - 2 * a["alpha"] * a["beta"] * xc * _window_sum(xp, scaled, r)
    return dx.astype(x.dtype, copy=False)
