"""Kernels of the 2-d pooling ops (max, average, their gradients, max with argmax),
written once over `ctx.xp`.

Pooling reduces the strided window view of flowlab.kernels.window_geometry tap by tap:
a running maximum, or a sum divided by each window's count of non-padding elements.
MaxPoolGrad sends each window's gradient to its first maximum in TensorFlow's scan
order: where the windows tile the input, tap by tap in cache blocks of images with bit
masks; otherwise through the tap number of each window's maximum.

Everything is computed in NHWC; NCHW inputs and outputs are transposed at the edges.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels import batch_blocks
from flowlab.kernels.registry import kernel
from flowlab.kernels.window_geometry import (
    WindowGeometry,
    check4,
    compute_dtype,
    finish,
    from_nhwc,
    invalid,
    sizes4,
    to_nhwc,
)
from flowlab.ops.conv_ops import spatial


def _pool_setup(ctx: Any, shape: tuple[int, ...]) -> WindowGeometry:
    fmt = ctx.attrs["data_format"]
    ksize = list(ctx.attrs["ksize"])
    c = 1 if fmt == "NCHW" else 3
    if ksize[0] != 1 or ksize[c] != 1:
        raise invalid("Pooling is not yet supported on the batch or depth dimension.")
    k = spatial(ksize, fmt)
    if min(k) < 1:
        raise invalid(f"Sliding window ksize must be positive, got {ksize}")
    nchw = fmt == "NCHW"
    hw = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    return WindowGeometry(ctx.attrs, hw, k, dilated=False)


def lowest(dtype: Any) -> Any:
    if np.issubdtype(dtype, np.floating):
        return -np.inf
    return np.iinfo(dtype).min


@kernel("MaxPool")
def max_pool(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    check4("input", x)
    geo = _pool_setup(ctx, x.shape)
    dtype = x.dtype
    xpad = geo.padded(xp, to_nhwc(x, geo.nchw), lowest(dtype))
    # A running maximum over the kh*kw strided taps: each pass is a vectorized
    # elementwise maximum, much faster than reducing a 6-d window view.
    taps = geo.taps()
    first = geo.tap(xpad, *taps[0])
    y = xp.empty(first.shape, dtype)

    def images(lo: int, hi: int) -> None:
        y[lo:hi] = first[lo:hi]
        for i, j in taps[1:]:
            xp.maximum(y[lo:hi], geo.tap(xpad, i, j)[lo:hi], out=y[lo:hi])

    batch_blocks.each(batch_blocks.bounds(xpad), images)
    if dtype in (np.float32, np.float64) and y.size and not bool(xp.isfinite(y.min())):
        # TensorFlow's CPU MaxPool starts from the lowest finite value and keeps x only
        # when x > max: NaNs are skipped, and a window of NaNs or -infs gives that lowest
        # value (-3.4028235e38).  Rare, so checked on the output (~15% of this kernel's
        # time, against 60% for fmax passes on every call).
        y = xp.array(geo.tap(xpad, *taps[0]))
        for i, j in taps[1:]:
            xp.fmax(y, geo.tap(xpad, i, j), out=y)
        xp.fmax(y, np.finfo(dtype).min, out=y)
    return finish(xp, y, dtype, geo.nchw)


def _counts(xp: Any, geo: WindowGeometry, h: int, w: int, dtype: Any) -> Any:
    """Number of non-padding elements in each window, [oh, ow, 1]."""
    def per_dim(size: int, out: int, k: int, s: int, before: int) -> Any:
        start = np.arange(out) * s - before
        return np.minimum(start + k, size) - np.maximum(start, 0)

    ch = per_dim(h, geo.out[0], geo.k[0], geo.s[0], geo.pad[0][0])
    cw = per_dim(w, geo.out[1], geo.k[1], geo.s[1], geo.pad[1][0])
    return xp.asarray((ch[:, None] * cw[None, :])[:, :, None].astype(dtype))


@kernel("AvgPool")
def avg_pool(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    check4("input", x)
    geo = _pool_setup(ctx, x.shape)
    dtype = x.dtype
    if dtype == np.float16:
        # TensorFlow's CPU kernel sums a window in half precision, tap by tap in row-major
        # order, and divides in half: rounding after each addition (bit-checked vs TF 2.21)
        xn = xp.ascontiguousarray(geo.padded(xp, to_nhwc(x, geo.nchw)))
        total = None
        for i, j in geo.taps():
            total = geo.tap(xn, i, j) if total is None else total + geo.tap(xn, i, j)
        return finish(xp, total / _counts(xp, geo, xn.shape[1] - sum(geo.pad[0]), xn.shape[2] - sum(geo.pad[1]),
                                           dtype), dtype, geo.nchw)
    ct = compute_dtype(dtype)
    xn = to_nhwc(x, geo.nchw).astype(ct, copy=False)
    win = geo.windows(xp, xp.ascontiguousarray(geo.padded(xp, xn)))
    total = win.sum(axis=(3, 4))
    return finish(xp, total / _counts(xp, geo, xn.shape[1], xn.shape[2], ct), dtype, geo.nchw)


@kernel("AvgPoolGrad", host_memory=("orig_input_shape",))
def avg_pool_grad(ctx: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    check4("grad", dy)
    in_shape = sizes4(sizes, "orig_input_shape")
    geo = _pool_setup(ctx, in_shape)
    dtype = dy.dtype
    ct = compute_dtype(dtype)
    nhwc_shape = (in_shape[0], in_shape[2], in_shape[3], in_shape[1]) if geo.nchw else in_shape
    dy = to_nhwc(dy, geo.nchw).astype(ct, copy=False)
    want = (nhwc_shape[0], geo.out[0], geo.out[1], nhwc_shape[3])
    if tuple(dy.shape) != want:
        raise invalid(f"AvgPoolGrad: grad has shape {list(dy.shape)}, expected {list(want)}")
    if dtype == np.float16:
        # TensorFlow's CPU kernel: dy * half(1 / count) added into the input in half, in the
        # order of the outputs (row-major): for one input element that is the taps reversed
        counts = _counts(xp, geo, nhwc_shape[1], nhwc_shape[2], np.float32)
        share = dy.astype(dtype) * (np.float32(1) / counts).astype(dtype)
        (pt, pb), (pl, pr) = geo.pad
        out = xp.zeros((nhwc_shape[0], nhwc_shape[1] + pt + pb, nhwc_shape[2] + pl + pr, nhwc_shape[3]), dtype)
        for i, j in reversed(geo.taps()):
            dst = geo.tap(out, i, j)
            dst += share
        return finish(xp, out[:, pt:pt + nhwc_shape[1], pl:pl + nhwc_shape[2], :], dtype, geo.nchw)
    share = dy / _counts(xp, geo, nhwc_shape[1], nhwc_shape[2], ct)
    cols = xp.broadcast_to(share[:, :, :, None, None, :], want[:3] + geo.k + (want[3],))
    return finish(xp, geo.col2im(xp, cols, nhwc_shape), dtype, geo.nchw)


def _argmax(ctx: Any, x: Any) -> tuple[WindowGeometry, Any, Any]:
    """(geometry, padded NHWC input, tap number of each window's maximum).

    TensorFlow's CPU rule: a window's first element inside the input (row-major order)
    starts the maximum and only a strictly greater element replaces it, so a gradient
    goes to the first maximum and padding is never chosen.
    """
    xp = ctx.xp
    geo = _pool_setup(ctx, x.shape)
    xpad = geo.padded(xp, to_nhwc(x, geo.nchw))
    n, c = xpad.shape[0], xpad.shape[3]
    best = xp.zeros((n, geo.out[0], geo.out[1], c), dtype=x.dtype)
    idx = xp.zeros(best.shape, dtype=np.int32)
    found = None
    for t, (i, j) in enumerate(geo.taps()):
        v = geo.tap(xpad, i, j)
        valid = geo.valid(xp, i, j)
        if valid is None:
            take = v > best if t else None
        else:
            take = valid & ((v > best) | ~found) if t else xp.broadcast_to(valid, best.shape)
            found = valid if found is None else found | valid
        if take is None:
            best[...] = v
            continue
        xp.copyto(best, v, where=take)
        xp.copyto(idx, t, where=take)
    return geo, xpad, idx


# Input bytes of one cache block of MaxPoolGrad's tiling path: its taps' passes then
# read a block that is still in the cache.  cnn_train's first pool (64 images of
# 28x28x32, one thread, AMD EPYC with AVX2): 9.1 ms whole, 6.2 in 1.6 MB blocks.
POOL_BLOCK_BYTES = 2 << 20


def _disjoint_grad(xp: Any, geo: WindowGeometry, x: Any, dy: Any) -> Any:
    """MaxPoolGrad when windows tile the input (stride == ksize, no padding) and no
    window has a NaN: tap by tap over a [n, oh, kh, ow, kw, c] view, in cache blocks of
    images, the blocks on the intra-op threads (flowlab.kernels.batch_blocks).  None
    when that does not apply.

    Each window's gradient goes to its first maximum in TensorFlow's row-major scan
    order and every other element is +0.0, as TensorFlow's zero-filled scatter gives:
    the gradient's bits are ANDed with an all-ones or all-zeros mask, so an inf or NaN
    gradient reaches its maximum alone (a product by a 0/1 mask would spread NaN over
    the window, and -0.0 where the gradient is negative)."""
    (oh, ow), (kh, kw) = geo.out, geo.k
    if geo.s != geo.k or any(geo.pad[0] + geo.pad[1]) or x.size == 0:
        return None
    n, h, w, c = x.shape
    x6 = x[:, :oh * kh, :ow * kw, :].reshape(n, oh, kh, ow, kw, c)
    full = (h, w) == (oh * kh, ow * kw)
    dx = (xp.empty if full else xp.zeros)((n, h, w, c), dtype=dy.dtype)
    bits = np.dtype(f"u{dy.dtype.itemsize}")
    d6 = dx[:, :oh * kh, :ow * kw, :].reshape(n, oh, kh, ow, kw, c).view(bits)  # a view: axes split
    dyb = dy.view(bits)
    ones = bits.type(np.iinfo(bits).max)
    nan = np.issubdtype(x.dtype, np.floating)
    taps = geo.taps()
    per_block = max(1, POOL_BLOCK_BYTES // max(1, x[0].nbytes)) if type(x) is np.ndarray else n
    found_nan = []

    def images(lo: int, hi: int) -> None:
        ys = (min(per_block, hi - lo), oh, ow, c)
        y, mk = xp.empty(ys, x.dtype), xp.empty(ys, bits)
        sel, taken = xp.empty(ys, bool), xp.empty(ys, bool)
        for a in range(lo, hi, per_block):
            b = min(hi, a + per_block)
            xs, yb, mb, sb, tb = x6[a:b], y[:b - a], mk[:b - a], sel[:b - a], taken[:b - a]
            xp.copyto(yb, xs[:, :, 0, :, 0, :])
            for i, j in taps[1:]:
                xp.maximum(yb, xs[:, :, i, :, j, :], out=yb)
            if nan and xp.isnan(yb).any():
                found_nan.append(a)
                return
            # A tap is chosen where it holds the maximum and no earlier tap did; the
            # last one wherever no other did (every window holds its maximum).
            for k, (i, j) in enumerate(taps):
                if k == len(taps) - 1:
                    if k:
                        xp.logical_not(tb, out=sb)
                    else:
                        sb.fill(True)
                    chosen = sb
                elif k == 0:
                    xp.equal(xs[:, :, i, :, j, :], yb, out=tb)
                    chosen = tb
                else:
                    xp.equal(xs[:, :, i, :, j, :], yb, out=sb)
                    xp.greater(sb, tb, out=sb)  # and not taken before
                    xp.logical_or(tb, sb, out=tb)
                    chosen = sb
                xp.multiply(chosen, ones, out=mb)
                xp.bitwise_and(dyb[a:b], mb, out=d6[a:b, :, i, :, j, :])

    batch_blocks.each(batch_blocks.bounds(x), images)
    return None if found_nan else dx


@kernel("MaxPoolGrad")
def max_pool_grad(ctx: Any, x: Any, y: Any, dy: Any) -> Any:
    xp = ctx.xp
    check4("orig_input", x)
    check4("grad", dy)
    geo = _pool_setup(ctx, x.shape)
    xn, dyn = to_nhwc(x, geo.nchw), to_nhwc(dy, geo.nchw)
    want = (xn.shape[0], geo.out[0], geo.out[1], xn.shape[3])
    if dyn.shape != want:
        raise invalid(f"Expected grad shape to be {list(from_nhwc(np.empty(want), geo.nchw).shape)}, "
                       f"but got {list(dy.shape)}")
    ct = compute_dtype(x.dtype)
    dyn = dyn.astype(ct, copy=False)
    fast = _disjoint_grad(xp, geo, xn, dyn)
    if fast is not None:
        return finish(xp, fast.astype(ct, copy=False), x.dtype, geo.nchw)
    _, _, idx = _argmax(ctx, x)
    zero = xp.zeros((), dtype=ct)
    taps = geo.taps()

    def routed(i: int, j: int) -> Any:
        return xp.where(idx == taps.index((i, j)), dyn, zero)

    dx = geo.scatter(xp, routed, to_nhwc(x, geo.nchw).shape, ct)
    return finish(xp, dx, x.dtype, geo.nchw)


@kernel("MaxPoolGradGrad")
def max_pool_grad_grad(ctx: Any, x: Any, y: Any, g: Any) -> Any:
    xp = ctx.xp
    check4("orig_input", x)
    check4("grad", g)
    if g.shape != x.shape:
        raise invalid(f"grad must have the shape of orig_input: {list(g.shape)} vs "
                       f"{list(x.shape)}")
    geo, _, idx = _argmax(ctx, x)
    gpad = geo.padded(xp, to_nhwc(g, geo.nchw))
    out = xp.zeros(idx.shape, dtype=g.dtype)
    for t, (i, j) in enumerate(geo.taps()):
        xp.copyto(out, geo.tap(gpad, i, j), where=idx == t)
    return finish(xp, out, g.dtype, geo.nchw)


# --- max pooling with argmax (NHWC only, as TensorFlow) ----------------------------------
def _argmax_attrs(ctx: Any) -> Any:
    return {**ctx.attrs, "data_format": "NHWC"}


class _NHWC:
    """`ctx` seen with data_format NHWC (the argmax ops have no data_format attr)."""

    def __init__(self, ctx: Any) -> None:
        self.xp = ctx.xp
        self.attrs = _argmax_attrs(ctx)


def _flat_argmax(xp: Any, geo: WindowGeometry, idx: Any, shape: tuple[int, ...], with_batch: bool,
                 dtype: Any) -> Any:
    """Tap numbers [n, oh, ow, c] -> flat input indices ((b*h + y)*w + x)*c + channel."""
    n, h, w, c = shape
    taps = np.asarray(geo.taps())
    ti, tj = xp.asarray(taps[:, 0]), xp.asarray(taps[:, 1])
    rows = xp.arange(geo.out[0])[None, :, None, None] * geo.s[0] - geo.pad[0][0] + ti[idx]
    cols = xp.arange(geo.out[1])[None, None, :, None] * geo.s[1] - geo.pad[1][0] + tj[idx]
    flat = (rows * w + cols) * c + xp.arange(c)[None, None, None, :]
    if with_batch:
        flat = flat + xp.arange(n)[:, None, None, None] * (h * w * c)
    return flat.astype(dtype)


@kernel("MaxPoolWithArgmax")
def max_pool_with_argmax(ctx: Any, x: Any) -> Any:
    check4("input", x)
    nctx = _NHWC(ctx)
    y = max_pool(nctx, x)
    geo, _, idx = _argmax(nctx, x)
    return y, _flat_argmax(ctx.xp, geo, idx, x.shape, ctx.attrs["include_batch_in_index"],
                           np.dtype(ctx.attrs["Targmax"].as_numpy_dtype))


@kernel("MaxPoolGradWithArgmax")
def max_pool_grad_with_argmax(ctx: Any, x: Any, dy: Any, argmax: Any) -> Any:
    xp = ctx.xp
    if argmax.dtype != np.int64:  # TensorFlow registers this kernel for int64 indices only
        raise invalid("No OpKernel was registered to support Op 'MaxPoolGradWithArgmax' with Targmax=DT_INT32")
    check4("input", x)
    geo = _pool_setup(_NHWC(ctx), x.shape)
    n, h, w, c = x.shape
    want = (n, geo.out[0], geo.out[1], c)
    if tuple(dy.shape) != want or tuple(argmax.shape) != want:
        raise invalid(f"Expected grad and argmax shape to be {list(want)}, but got {list(dy.shape)} and "
                       f"{list(argmax.shape)}")
    flat = argmax.astype(np.int64)
    if not ctx.attrs["include_batch_in_index"]:
        flat = flat + xp.arange(n, dtype=np.int64)[:, None, None, None] * (h * w * c)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= x.size):
        raise invalid("Invalid argmax index: out of range of the input")
    ct = compute_dtype(dy.dtype)
    out = xp.zeros(x.size, dtype=ct)
    if xp is np:
        np.add.at(out, flat.reshape(-1), dy.astype(ct, copy=False).reshape(-1))
    else:
        xp.add.at(out, flat.reshape(-1), dy.astype(ct, copy=False).reshape(-1))
    return out.reshape(x.shape).astype(dy.dtype, copy=False)
