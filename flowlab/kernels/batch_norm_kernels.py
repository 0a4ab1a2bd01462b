"""Kernels of FusedBatchNormV3 and FusedBatchNormGradV3 (TensorFlow's CPU formulas).

The statistics are computed in the op's `U` dtype (float32 for float16 inputs): the
mean as sum / n, the biased variance as the mean of the squared centred values, and
y = (x - mean) * (rsqrt(var + eps) * scale) + offset.  In training the batch_variance
output carries Bessel's correction n / (n - 1) (1 when n == 1), optionally blended
into the running value with `exponential_avg_factor`; reserve_space_1/2 keep the
batch mean and the biased variance for the gradient, reserve_space_3 is a scalar
placeholder as on TensorFlow's CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel


def _layout(fmt: str, ndim: int) -> tuple[int, tuple[int, ...]]:
    """(channel axis, reduction axes) of a data_format."""
    channel = 1 if fmt.startswith("NC") else ndim - 1
    return channel, tuple(i for i in range(ndim) if i != channel)


def _bshape(channel: int, ndim: int, c: int) -> tuple[int, ...]:
    return tuple(c if i == channel else 1 for i in range(ndim))


def _check_vec(name: str, v: Any, c: int) -> None:
    if v.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"{name} must be 1-dimensional{list(v.shape)}")
    if v.shape[0] != c:
        raise errors.InvalidArgumentError(
            None, None, f"{name} must have the same number of elements as the channels of x, "
            f"got {v.shape[0]} and {c}")


@kernel("FusedBatchNormV3")
def _fused_batch_norm(ctx: Any, x: Any, scale: Any, offset: Any, mean: Any, var: Any) -> Any:
    xp = ctx.xp
    a = ctx.attrs
    fmt, training = a["data_format"], a["is_training"]
    want = 5 if fmt in ("NDHWC", "NCDHW") else 4
    if x.ndim != want:
        raise errors.InvalidArgumentError(
            None, None, f"input must be {want}-dimensional{list(x.shape)}")
    u = np.dtype(scale.dtype)
    channel, axes = _layout(fmt, x.ndim)
    c = x.shape[channel]
    _check_vec("scale", scale, c)
    _check_vec("offset", offset, c)
    factor = u.type(a["exponential_avg_factor"])
    if not training or factor != 1:
        _check_vec("mean", mean, c)
        _check_vec("variance", var, c)
    eps = u.type(a["epsilon"])
    bs = _bshape(channel, x.ndim, c)
    xu = x.astype(u, copy=False)
    if training:
        n = x.size // c if c else 0
        bmean = (xp.sum(xu, axis=axes) * u.type(1.0 / n) if n else xp.full((c,), np.nan, u)).astype(u)
        centered = xu - bmean.reshape(bs)
        bvar = (xp.sum(centered * centered, axis=axes) * u.type(1.0 / n) if n
                else xp.full((c,), np.nan, u)).astype(u)
        adjust = u.type(n / (n - 1)) if n > 1 else u.type(1)
        out_mean, out_var = bmean, bvar * adjust
        if factor != 1:
            keep = u.type(1) - factor
            out_mean = keep * mean + factor * out_mean
            out_var = keep * var + factor * out_var
        saved_mean, saved_var = bmean, bvar
    else:
        centered = xu - mean.astype(u).reshape(bs)
        out_mean, out_var = mean, var
        saved_mean, saved_var = mean, var
        bvar = var
    factor_vec = (u.type(1) / xp.sqrt(bvar + eps)) * scale
    y = centered * factor_vec.reshape(bs) + offset.reshape(bs)
    return [y.astype(x.dtype, copy=False), out_mean.astype(u, copy=False), out_var.astype(u, copy=False),
            saved_mean.astype(u, copy=True), saved_var.astype(u, copy=True), u.type(0)]


@kernel("FusedBatchNormGradV3")
def _fused_batch_norm_grad(ctx: Any, dy: Any, x: Any, scale: Any, r1: Any, r2: Any, r3: Any) -> Any:
    del r3
    xp = ctx.xp
    a = ctx.attrs
    u = np.dtype(scale.dtype)
    channel, axes = _layout(a["data_format"], x.ndim)
    c = x.shape[channel]
    bs = _bshape(channel, x.ndim, c)
    eps = u.type(a["epsilon"])
    dyu, xu = dy.astype(u, copy=False), x.astype(u, copy=False)
    rinv = u.type(1) / xp.sqrt(r2.astype(u) + eps)
    centered = xu - r1.astype(u).reshape(bs)
    x_scaled = centered * rinv.reshape(bs)
    doffset = xp.sum(dyu, axis=axes).astype(u)
    dscale = xp.sum(dyu * x_scaled, axis=axes).astype(u)
    if a["is_training"]:
        n = x.size // c if c else 0
        inv_n = u.type(1.0 / n) if n else u.type(0)
        dx = (scale * rinv).reshape(bs) * (
            dyu - (doffset * inv_n).reshape(bs) - x_scaled * (dscale * inv_n).reshape(bs))
    else:
        dx = dyu * (scale * rinv).reshape(bs)
    empty = xp.zeros((0,), u)
    return [dx.astype(x.dtype, copy=False), dscale, doffset, empty, empty.copy()]
