"""Kernels of the 2-d convolution ops, written once over `ctx.xp`.

Convolution is im2col plus one GEMM: the padded input is viewed (no copy, through
`as_strided`; flowlab.kernels.window_geometry) as windows [batch, out_h, out_w, kh, kw,
in]; one reshape copies them into a [batch*out_h*out_w, kh*kw*in] matrix that
multiplies the [kh*kw*in, out] filter.  The filter backprop is the transposed GEMM
(columns^T @ out_backprop) and the input backprop a GEMM (out_backprop @ filter^T)
followed by col2im: kh*kw strided vectorized additions into a zero padded input.
Grouped convolutions batch the GEMM over groups.

On NumPy a batch is done by blocks of images (flowlab.kernels.conv_blocks): a few
images at a time, so that one block's column matrix stays in the cache, and with two
or more intra-op threads (flowlab.runtime.thread_policy) the blocks shared out among
them; a single image shares the GEMMs' rows instead.  The input backprop of a stride-1
convolution is there one more convolution forward: out_backprop, zero padded,
correlated with the flipped filter (no col2im).

Everything is computed in NHWC; NCHW inputs and outputs are transposed at the edges.
float16 is computed in float32 and rounded back, as TensorFlow accumulates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels import conv_blocks
from flowlab.kernels.fp_state import ignoring
from flowlab.kernels.intra_op import sharded_matmul, sharded_matmul_tn
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


def _groups(c: int, fc: int, o: int) -> int:
    if fc == 0 or c % fc:
        raise invalid(f"input depth must be evenly divisible by filter depth: {c} vs {fc}")
    g = c // fc
    if o % g:
        raise invalid(f"output depth must be evenly divisible by number of groups: {o} vs {g}")
    return g


def _conv_setup(ctx: Any, x_shape: tuple[int, ...], f_shape: tuple[int, ...]) -> tuple[WindowGeometry, int]:
    nchw = ctx.attrs["data_format"] == "NCHW"
    n, h, w, c = (x_shape[0], x_shape[2], x_shape[3], x_shape[1]) if nchw else x_shape
    kh, kw, fc, o = f_shape
    g = _groups(c, fc, o)
    return WindowGeometry(ctx.attrs, (h, w), (kh, kw)), g


def _im2col(xp: Any, geo: WindowGeometry, x: Any) -> Any:
    """[n*oh*ow, kh*kw*c] columns of the NHWC input (the one copy of the conv)."""
    n, c = x.shape[0], x.shape[3]
    win = geo.windows(xp, xp.ascontiguousarray(geo.padded(xp, x)))
    return win.reshape(n * geo.out[0] * geo.out[1], geo.k[0] * geo.k[1] * c)


def _windows_of(geo: WindowGeometry, x: np.ndarray) -> np.ndarray:
    return geo.windows(np, np.ascontiguousarray(geo.padded(np, x)))


def _grouped(cols: Any, m: int, kk: int, g: int, cg: int) -> Any:
    """[m, kk*g*cg] columns -> [g, m, kk*cg]."""
    return cols.reshape(m, kk, g, cg).transpose(2, 0, 1, 3).reshape(g, m, kk * cg)


@kernel("Conv2D", expensive=True)
def conv2d(ctx: Any, x: Any, f: Any) -> Any:
    xp = ctx.xp
    check4("input", x)
    check4("filter", f)
    geo, g = _conv_setup(ctx, x.shape, f.shape)
    dtype = x.dtype
    ct = compute_dtype(dtype)
    x = to_nhwc(x, geo.nchw).astype(ct, copy=False)
    kh, kw, cg, o = f.shape
    n = x.shape[0]
    m, kk = n * geo.out[0] * geo.out[1], kh * kw
    f = f.astype(ct, copy=False)
    if xp is np and g == 1 and n > 1:
        bounds = conv_blocks.image_blocks(n, m * kk * cg * o)
        y = conv_blocks.forward(_windows_of(geo, x), f.reshape(kk * cg, o), bounds)
        return finish(xp, y.reshape(n, geo.out[0], geo.out[1], o), dtype, geo.nchw)
    cols = _im2col(xp, geo, x)
    if g == 1:
        y = (sharded_matmul if xp is np else xp.matmul)(cols, f.reshape(kk * cg, o))
    else:
        og = o // g
        fg = f.reshape(kk, cg, g, og).transpose(2, 0, 1, 3).reshape(g, kk * cg, og)
        y = xp.matmul(_grouped(cols, m, kk, g, cg), fg).transpose(1, 0, 2)
    return finish(xp, y.reshape(n, geo.out[0], geo.out[1], o), dtype, geo.nchw)


def conv2d_bias_relu(ctx: Any, x: Any, f: Any, bias: Any) -> tuple[Any, bool]:
    """Conv2D's kernel with the BiasAdd and the Relu that consume its output done on
    each cache block of that output while it is in the cache, which saves their two
    passes over memory (flowlab.runtime.task.epilogues fuses the three ops of a plan
    into this call).  Returns (the Relu's value, True), or, where the bias does not fit
    (not a vector of the output depth and dtype) or the convolution is not done by
    blocks, (the Conv2D's value, False): the BiasAdd and the Relu then run their own
    kernels, which raise their own errors.  The values are the three kernels' bits: the
    same elementwise operations on the same operands."""
    check4("input", x)
    check4("filter", f)
    geo, g = _conv_setup(ctx, x.shape, f.shape)
    kh, kw, cg, o = f.shape
    n = x.shape[0]
    if not (ctx.xp is np and g == 1 and n > 1 and not geo.nchw and x.dtype in (np.float32, np.float64)
            and f.dtype == x.dtype and type(bias) is np.ndarray and bias.shape == (o,)
            and bias.dtype == x.dtype):
        return conv2d(ctx, x, f), False
    zeros = np.zeros(o, x.dtype)  # maximum against an array is NumPy's vector loop

    def epilogue(rows: np.ndarray) -> None:
        with ignoring():  # an intra-op helper thread: silent as the step is
            np.add(rows, bias, out=rows)  # BiasAdd
            np.maximum(rows, zeros, out=rows)  # Relu (NaN propagates, as there)

    m = n * geo.out[0] * geo.out[1]
    bounds = conv_blocks.image_blocks(n, m * kh * kw * cg * o)
    y = conv_blocks.forward(_windows_of(geo, x), f.reshape(kh * kw * cg, o), bounds, epilogue)
    return y.reshape(n, geo.out[0], geo.out[1], o), True


@kernel("Conv2DBackpropInput", expensive=True, host_memory=("input_sizes",))
def conv2d_backprop_input(ctx: Any, sizes: Any, f: Any, dy: Any) -> Any:
    xp = ctx.xp
    check4("filter", f)
    check4("out_backprop", dy)
    in_shape = sizes4(sizes, "input_sizes")
    geo, g = _conv_setup(ctx, in_shape, f.shape)
    dtype = dy.dtype
    ct = compute_dtype(dtype)
    dy = to_nhwc(dy, geo.nchw).astype(ct, copy=False)
    nhwc_shape = (in_shape[0], in_shape[2], in_shape[3], in_shape[1]) if geo.nchw else in_shape
    kh, kw, cg, o = f.shape
    n = nhwc_shape[0]
    check_out_backprop("Conv2DCustomBackprop", dy, (n, geo.out[0], geo.out[1], o))
    m, kk = n * geo.out[0] * geo.out[1], kh * kw
    f = f.astype(ct, copy=False)
    dy2 = dy.reshape(m, o)
    oh, ow = geo.out
    if xp is np and g == 1 and n > 1:
        bounds = conv_blocks.image_blocks(n, m * o * kk * cg)
        dx = conv_blocks.input_grad_by_correlation(geo, dy, f, nhwc_shape, bounds)
        if dx is None and len(bounds) > 2:
            dx = conv_blocks.input_grad_by_taps(geo, bounds, dy2, f.reshape(kk, cg, o).transpose(0, 2, 1),
                                                nhwc_shape, ct)
        if dx is not None:
            return finish(xp, dx, dtype, geo.nchw)
    if g == 1:
        # One GEMM per tap ([m, o] @ [o, c], batched in one call) gives each tap's
        # contribution as a contiguous block: col2im then reads them sequentially.
        ft = f.reshape(kk, cg, o).transpose(0, 2, 1)
        taps = conv_blocks.per_tap(dy2, ft) if xp is np else xp.matmul(dy2, ft)
        taps = taps.reshape(kh, kw, n, oh, ow, cg)
        dx = geo.scatter(xp, lambda i, j: taps[i, j], nhwc_shape, ct)
    else:
        og = o // g
        fg = f.reshape(kk, cg, g, og).transpose(2, 3, 0, 1).reshape(g, og, kk * cg)
        dyg = dy2.reshape(m, g, og).transpose(1, 0, 2)
        cols = xp.matmul(dyg, fg).reshape(g, m, kk, cg).transpose(1, 2, 0, 3)
        dx = geo.col2im(xp, cols.reshape(n, oh, ow, kh, kw, g * cg), nhwc_shape)
    return finish(xp, dx, dtype, geo.nchw)


@kernel("Conv2DBackpropFilter", expensive=True, host_memory=("filter_sizes",))
def conv2d_backprop_filter(ctx: Any, x: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    check4("input", x)
    check4("out_backprop", dy)
    f_shape = sizes4(sizes, "filter_sizes")
    geo, g = _conv_setup(ctx, x.shape, f_shape)
    dtype = x.dtype
    ct = compute_dtype(dtype)
    x = to_nhwc(x, geo.nchw).astype(ct, copy=False)
    dy = to_nhwc(dy, geo.nchw).astype(ct, copy=False)
    kh, kw, cg, o = f_shape
    n = x.shape[0]
    check_out_backprop("Conv2DCustomBackprop", dy, (n, geo.out[0], geo.out[1], o))
    m, kk = n * geo.out[0] * geo.out[1], kh * kw
    dy2 = dy.reshape(m, o)
    if xp is np and g == 1 and n > 1:
        bounds = conv_blocks.image_blocks(n, m * kk * cg * o)
        df = conv_blocks.filter_grad(_windows_of(geo, x), dy2, bounds)
        return np.ascontiguousarray(df.reshape(f_shape)).astype(dtype, copy=False)
    cols = _im2col(xp, geo, x)
    if g == 1:
        df = sharded_matmul_tn(cols, dy2) if xp is np else xp.matmul(cols.T, dy2)
    else:
        og = o // g
        dyg = dy2.reshape(m, g, og).transpose(1, 0, 2)
        dfg = xp.matmul(_grouped(cols, m, kk, g, cg).transpose(0, 2, 1), dyg)  # [g, kk*cg, og]
        df = dfg.reshape(g, kk, cg, og).transpose(1, 2, 0, 3)
    return xp.ascontiguousarray(df.reshape(f_shape)).astype(dtype, copy=False)
