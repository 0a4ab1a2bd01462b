"""Kernels of the depthwise convolutions and of SpaceToBatchND / BatchToSpaceND,
written once over `ctx.xp` (CPU and GPU).

Depthwise convolution: each input channel c has its own `m` filters, output channel
c*m + k.  With the strided tap views of `WindowGeometry` (window_geometry) it is kh*kw
vectorized multiply-adds (tap [n, oh, ow, c, 1] times filter[i, j] [c, m]) -- no
im2col matrix, since there is no reduction over channels to give to a GEMM.  The
input backprop scatters each tap's sum over m back (col2im), the filter backprop
reduces each tap against out_backprop (one small einsum per tap).

SpaceToBatchND / BatchToSpaceND are a pad or crop plus one reshape-transpose-reshape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.registry import kernel
from flowlab.kernels.window_geometry import (
    WindowGeometry,
    check4,
    check_out_backprop,
    compute_dtype,
    finish,
    invalid,
    sizes4,
    to_nhwc,
)


def _setup(ctx: Any, x_shape: tuple[int, ...], f_shape: tuple[int, ...]) -> tuple[WindowGeometry, tuple[int, ...]]:
    nchw = ctx.attrs["data_format"] == "NCHW"
    n, h, w, c = (x_shape[0], x_shape[2], x_shape[3], x_shape[1]) if nchw else tuple(x_shape)
    kh, kw, fc, _ = f_shape
    sh, sw = (ctx.attrs["strides"][2:] if nchw else ctx.attrs["strides"][1:3])
    if sh != sw:
        raise invalid("Current implementation only supports equal length strides in the row and column "
                       "dimensions.")
    if fc != c:
        raise invalid(f"input and filter must have the same depth: {c} vs {fc}")
    return WindowGeometry(ctx.attrs, (h, w), (kh, kw)), (n, h, w, c)


@kernel("DepthwiseConv2dNative", expensive=True)
def depthwise_conv2d_native(ctx: Any, x: Any, f: Any) -> Any:
    xp = ctx.xp
    check4("input", x)
    check4("filter", f)
    geo, (n, _, _, c) = _setup(ctx, x.shape, f.shape)
    dtype = x.dtype
    ct = compute_dtype(dtype)
    xpad = geo.padded(xp, to_nhwc(x, geo.nchw).astype(ct, copy=False))
    f = f.astype(ct, copy=False)
    m = f.shape[3]
    oh, ow = geo.out
    # The first tap writes the sum, the others multiply into one reused buffer and add:
    # two passes over the output per tap, no allocation per tap.
    taps = geo.taps()
    y = xp.multiply(geo.tap(xpad, *taps[0])[..., None], f[taps[0]])
    tmp = xp.empty_like(y)
    for i, j in taps[1:]:
        xp.multiply(geo.tap(xpad, i, j)[..., None], f[i, j], out=tmp)
        y += tmp
    return finish(xp, y.reshape(n, oh, ow, c * m), dtype, geo.nchw)


@kernel("DepthwiseConv2dNativeBackpropInput", expensive=True, host_memory=("input_sizes",))
def depthwise_conv2d_native_backprop_input(ctx: Any, sizes: Any, f: Any, dy: Any) -> Any:
    xp = ctx.xp
    check4("filter", f)
    check4("out_backprop", dy)
    in_shape = sizes4(sizes, "input_sizes")
    geo, nhwc_shape = _setup(ctx, in_shape, f.shape)
    n, _, _, c = nhwc_shape
    dtype = dy.dtype
    ct = compute_dtype(dtype)
    m = f.shape[3]
    dyn = to_nhwc(dy, geo.nchw).astype(ct, copy=False)
    check_out_backprop("DepthwiseConv2DBackprop", dyn, (n, geo.out[0], geo.out[1], c * m))
    dy5 = dyn.reshape(n, geo.out[0], geo.out[1], c, m)
    f = f.astype(ct, copy=False)
    if m == 1:  # no sum over the multiplier: one product per tap
        dy4, f3 = dy5[..., 0], f[..., 0]
        dx = geo.scatter(xp, lambda i, j: dy4 * f3[i, j], nhwc_shape, ct)
    else:
        dx = geo.scatter(xp, lambda i, j: xp.einsum("nhwcm,cm->nhwc", dy5, f[i, j]), nhwc_shape, ct)
    return finish(xp, dx, dtype, geo.nchw)


@kernel("DepthwiseConv2dNativeBackpropFilter", expensive=True, host_memory=("filter_sizes",))
def depthwise_conv2d_native_backprop_filter(ctx: Any, x: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    check4("input", x)
    check4("out_backprop", dy)
    f_shape = sizes4(sizes, "filter_sizes")
    geo, (n, _, _, c) = _setup(ctx, x.shape, f_shape)
    dtype = x.dtype
    ct = compute_dtype(dtype)
    m = f_shape[3]
    xpad = geo.padded(xp, to_nhwc(x, geo.nchw).astype(ct, copy=False))
    dyn = to_nhwc(dy, geo.nchw).astype(ct, copy=False)
    check_out_backprop("DepthwiseConv2DBackprop", dyn, (n, geo.out[0], geo.out[1], c * m))
    dy5 = dyn.reshape(n, geo.out[0], geo.out[1], c, m)
    df = xp.empty(tuple(f_shape), dtype=ct)
    for i, j in geo.taps():
        df[i, j] = xp.einsum("nhwc,nhwcm->cm", geo.tap(xpad, i, j), dy5)
    return df.astype(dtype, copy=False)


# --- SpaceToBatchND / BatchToSpaceND ---------------------------------------------------
def _host(v: Any) -> np.ndarray:
    return np.asarray(v.get() if hasattr(v, "get") else v, dtype=np.int64)


def _block_args(x: Any, block_shape: Any, pads: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    block, p = _host(block_shape), _host(pads)
    if block.ndim != 1:
        raise invalid(f"block_shape must be one-dimensional, got shape {list(block.shape)}")
    m = block.shape[0]
    if p.shape != (m, 2):
        raise invalid(f"{what} should have shape [{m}, 2] instead of {list(p.shape)}")
    if x.ndim < 1 + m:
        raise invalid(f"input rank should be >= {1 + m} instead of {x.ndim}")
    if (block < 1).any():
        raise invalid(f"All values in block_shape must be positive, got value, {int(block.min())} instead.")
    if (p < 0).any():
        raise invalid(f"Negative {what} values are not allowed")
    return block, p


@kernel("SpaceToBatchND", host_memory=("block_shape", "paddings"))
def space_to_batch_nd(ctx: Any, x: Any, block_shape: Any, paddings: Any) -> Any:
    xp = ctx.xp
    x = xp.asarray(x)
    block, pads = _block_args(x, block_shape, paddings, "paddings")
    m = len(block)
    width = [(0, 0)] + [tuple(int(v) for v in pads[i]) for i in range(m)] + [(0, 0)] * (x.ndim - 1 - m)
    xpad = xp.pad(x, width) if pads.any() else x
    b, spatial, rest = xpad.shape[0], xpad.shape[1:1 + m], xpad.shape[1 + m:]
    for i in range(m):
        if spatial[i] % block[i]:
            raise invalid(f"padded_shape[{i}]={spatial[i]} is not divisible by block_shape[{i}]={int(block[i])}")
    split: list[int] = [b]
    for i in range(m):
        split += [spatial[i] // int(block[i]), int(block[i])]
    y = xpad.reshape(split + list(rest))
    # [b, s1, b1, ..., sM, bM, rest] -> [b1, ..., bM, b, s1, ..., sM, rest]
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, y.ndim))
    y = y.transpose(order)
    out = [b * int(block.prod())] + [spatial[i] // int(block[i]) for i in range(m)] + list(rest)
    return xp.ascontiguousarray(y).reshape(out)


@kernel("BatchToSpaceND", host_memory=("block_shape", "crops"))
def batch_to_space_nd(ctx: Any, x: Any, block_shape: Any, crops: Any) -> Any:
    xp = ctx.xp
    x = xp.asarray(x)
    block, cr = _block_args(x, block_shape, crops, "crops")
    m = len(block)
    prod = int(block.prod())
    if x.shape[0] % prod:
        raise invalid(f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes ({prod})")
    b = x.shape[0] // prod
    spatial, rest = x.shape[1:1 + m], x.shape[1 + m:]
    y = x.reshape([int(v) for v in block] + [b] + list(spatial) + list(rest))
    # [b1, ..., bM, b, s1, ..., sM, rest] -> [b, s1, b1, ..., sM, bM, rest]
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, y.ndim))
    y = xp.ascontiguousarray(y.transpose(order)).reshape(
        [b] + [spatial[i] * int(block[i]) for i in range(m)] + list(rest))
    index = [slice(None)]
    for i in range(m):
        full = spatial[i] * int(block[i])
        lo, hi = int(cr[i, 0]), int(cr[i, 1])
        if lo + hi > full:
            raise invalid(f"crops must be less than or equal to the input size: {lo}+{hi} > {full}")
        index.append(slice(lo, full - hi))
    return xp.ascontiguousarray(y[tuple(index)])
