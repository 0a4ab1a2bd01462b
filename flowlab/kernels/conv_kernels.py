"""Kernels of the convolution and pooling ops, written once over `ctx.xp`.

Convolution is im2col plus one GEMM: the padded input is viewed (no copy, through
`as_strided`) as windows [batch, out_h, out_w, kh, kw, in]; one reshape copies them
into a [batch*out_h*out_w, kh*kw*in] matrix that multiplies the [kh*kw*in, out] filter.
The filter backprop is the transposed GEMM (columns^T @ out_backprop) and the input
backprop a GEMM (out_backprop @ filter^T) followed by col2im: kh*kw strided
vectorized additions into a zero padded input.  Grouped convolutions batch the GEMM
over groups.  Pooling reduces the same strided window view; MaxPoolGrad sends each
window's gradient to its first maximum (TensorFlow's scan order) with one bincount.

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

from flowlab import errors
from flowlab.kernels import batch_blocks, conv_blocks
from flowlab.kernels.fp_state import ignoring
from flowlab.kernels.intra_op import sharded_matmul, sharded_matmul_tn
from flowlab.kernels.registry import kernel
from flowlab.ops.conv_ops import explicit_pads, output_size, spatial


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class _Geometry:
    """Window geometry of one node: kernel, strides, dilations, pads and output size."""

    def __init__(self, attrs: dict[str, Any], in_hw: tuple[int, int], k_hw: tuple[int, int],
                 dilated: bool = True) -> None:
        fmt = attrs["data_format"]
        self.nchw = fmt == "NCHW"
        strides = list(attrs["strides"])
        c = 1 if self.nchw else 3
        if strides[0] != 1 or strides[c] != 1:
            raise _invalid("Current implementation does not yet support strides in the batch "
                           "and depth dimensions.")
        self.s = spatial(strides, fmt)
        if min(self.s) < 1:
            raise _invalid(f"Sliding window strides must be positive, got {strides}")
        self.d = (1, 1)
        if dilated:
            dil = list(attrs["dilations"])
            if dil[0] != 1 or dil[c] != 1:
                raise _invalid("Current implementation does not yet support dilations in the "
                               "batch and depth dimensions.")
            self.d = spatial(dil, fmt)
            if min(self.d) < 1:
                raise _invalid(f"Dilation rates must be positive, got {dil}")
        padding = attrs["padding"]
        pads = ((0, 0), (0, 0))
        if padding == "EXPLICIT":
            pads = explicit_pads(list(attrs["explicit_paddings"]), fmt)
            if min(min(p) for p in pads) < 0:
                raise _invalid("All elements of explicit_paddings must be nonnegative")
        self.k = k_hw
        self.in_hw = in_hw
        try:
            oh, pt, pb = output_size(in_hw[0], k_hw[0], self.s[0], self.d[0], padding, pads[0])
            ow, pl, pr = output_size(in_hw[1], k_hw[1], self.s[1], self.d[1], padding, pads[1])
        except ValueError as e:
            raise _invalid(f"Computed output size would be negative: {e}") from None
        self.out = (oh, ow)
        self.pad = ((pt, pb), (pl, pr))

    def padded(self, xp: Any, x: Any, value: Any = 0) -> Any:
        (pt, pb), (pl, pr) = self.pad
        if pt == pb == pl == pr == 0:
            return x
        return xp.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=value)

    def windows(self, xp: Any, xp_padded: Any) -> Any:
        """A strided view [n, oh, ow, kh, kw, c] of the padded NHWC input (no copy)."""
        n, _, _, c = xp_padded.shape
        sn, sh, sw, sc = xp_padded.strides
        shape = (n, self.out[0], self.out[1], self.k[0], self.k[1], c)
        strides = (sn, sh * self.s[0], sw * self.s[1], sh * self.d[0], sw * self.d[1], sc)
        if xp is np:
            return np.lib.stride_tricks.as_strided(xp_padded, shape, strides, writeable=False)
        return xp.lib.stride_tricks.as_strided(xp_padded, shape, strides)  # CuPy: no writeable

    def tap(self, x_padded: Any, i: int, j: int) -> Any:
        """The [n, oh, ow, c] strided view of the padded input under window tap (i, j)."""
        r, q = i * self.d[0], j * self.d[1]
        (oh, ow), (sh, sw) = self.out, self.s
        return x_padded[:, r:r + (oh - 1) * sh + 1:sh, q:q + (ow - 1) * sw + 1:sw, :]

    def taps(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(self.k[0]) for j in range(self.k[1])]

    def scatter(self, xp: Any, tap_values: Any, in_shape: tuple[int, ...], dtype: Any) -> Any:
        """col2im: sum `tap_values(i, j)` ([n, oh, ow, c] each) back into an NHWC input.

        One strided addition per tap on a padded buffer; no [n, oh, ow, kh, kw, c]
        intermediate exists, so each addition reads a contiguous operand.
        """
        n, h, w, c = in_shape
        (pt, pb), (pl, pr) = self.pad
        out = xp.zeros((n, h + pt + pb, w + pl + pr, c), dtype=dtype)
        for i, j in self.taps():
            dst = self.tap(out, i, j)
            dst += tap_values(i, j)
        return out[:, pt:pt + h, pl:pl + w, :]

    def col2im(self, xp: Any, cols: Any, in_shape: tuple[int, ...]) -> Any:
        """Sum window-shaped values [n, oh, ow, kh, kw, c] back into an NHWC input."""
        return self.scatter(xp, lambda i, j: cols[:, :, :, i, j, :], in_shape, cols.dtype)

    def valid(self, xp: Any, i: int, j: int) -> Any:
        """[1, oh, ow, 1] mask: which windows' tap (i, j) lies inside the unpadded input,
        or None when every tap of every window does (no padding)."""
        (pt, pb), (pl, pr) = self.pad
        if pt == pb == pl == pr == 0:
            return None
        h = self.in_hw[0]
        w = self.in_hw[1]
        rows = np.arange(self.out[0]) * self.s[0] + i * self.d[0] - pt
        cols = np.arange(self.out[1]) * self.s[1] + j * self.d[1] - pl
        m = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
        return xp.asarray(m[None, :, :, None])


def _nhwc(x: Any, nchw: bool) -> Any:
    return x.transpose(0, 2, 3, 1) if nchw else x


def _back(x: Any, nchw: bool) -> Any:
    return x.transpose(0, 3, 1, 2) if nchw else x


def _compute_dtype(dtype: Any) -> Any:
    return np.float32 if dtype == np.float16 else dtype


def _finish(xp: Any, y: Any, dtype: Any, nchw: bool) -> Any:
    return xp.ascontiguousarray(_back(y, nchw)).astype(dtype, copy=False)


def _check4(what: str, x: Any) -> None:
    if x.ndim != 4:
        raise _invalid(f"{what} must be 4-dimensional: {list(x.shape)}")


def _groups(c: int, fc: int, o: int) -> int:
    if fc == 0 or c % fc:
        raise _invalid(f"input depth must be evenly divisible by filter depth: {c} vs {fc}")
    g = c // fc
    if o % g:
        raise _invalid(f"output depth must be evenly divisible by number of groups: {o} vs {g}")
    return g


def _conv_setup(ctx: Any, x_shape: tuple[int, ...], f_shape: tuple[int, ...]) -> tuple[_Geometry, int]:
    nchw = ctx.attrs["data_format"] == "NCHW"
    n, h, w, c = (x_shape[0], x_shape[2], x_shape[3], x_shape[1]) if nchw else x_shape
    kh, kw, fc, o = f_shape
    g = _groups(c, fc, o)
    return _Geometry(ctx.attrs, (h, w), (kh, kw)), g


def _im2col(xp: Any, geo: _Geometry, x: Any) -> Any:
    """[n*oh*ow, kh*kw*c] columns of the NHWC input (the one copy of the conv)."""
    n, c = x.shape[0], x.shape[3]
    win = geo.windows(xp, xp.ascontiguousarray(geo.padded(xp, x)))
    return win.reshape(n * geo.out[0] * geo.out[1], geo.k[0] * geo.k[1] * c)


def _windows_of(geo: _Geometry, x: np.ndarray) -> np.ndarray:
    return geo.windows(np, np.ascontiguousarray(geo.padded(np, x)))


def _grouped(cols: Any, m: int, kk: int, g: int, cg: int) -> Any:
    """[m, kk*g*cg] columns -> [g, m, kk*cg]."""
    return cols.reshape(m, kk, g, cg).transpose(2, 0, 1, 3).reshape(g, m, kk * cg)


@kernel("Conv2D", expensive=True)
def conv2d(ctx: Any, x: Any, f: Any) -> Any:
    xp = ctx.xp
    _check4("input", x)
    _check4("filter", f)
    geo, g = _conv_setup(ctx, x.shape, f.shape)
    dtype = x.dtype
    ct = _compute_dtype(dtype)
    x = _nhwc(x, geo.nchw).astype(ct, copy=False)
    kh, kw, cg, o = f.shape
    n = x.shape[0]
    m, kk = n * geo.out[0] * geo.out[1], kh * kw
    f = f.astype(ct, copy=False)
    if xp is np and g == 1 and n > 1:
        bounds = conv_blocks.image_blocks(n, m * kk * cg * o)
        y = conv_blocks.forward(_windows_of(geo, x), f.reshape(kk * cg, o), bounds)
        return _finish(xp, y.reshape(n, geo.out[0], geo.out[1], o), dtype, geo.nchw)
    cols = _im2col(xp, geo, x)
    if g == 1:
        y = (sharded_matmul if xp is np else xp.matmul)(cols, f.reshape(kk * cg, o))
    else:
        og = o // g
        fg = f.reshape(kk, cg, g, og).transpose(2, 0, 1, 3).reshape(g, kk * cg, og)
        y = xp.matmul(_grouped(cols, m, kk, g, cg), fg).transpose(1, 0, 2)
    return _finish(xp, y.reshape(n, geo.out[0], geo.out[1], o), dtype, geo.nchw)


def conv2d_bias_relu(ctx: Any, x: Any, f: Any, bias: Any) -> tuple[Any, bool]:
    """Conv2D's kernel with the BiasAdd and the Relu that consume its output done on
    each cache block of that output while it is in the cache, which saves their two
    passes over memory (flowlab.runtime.task.epilogues fuses the three ops of a plan
    into this call).  Returns (the Relu's value, True), or, where the bias does not fit
    (not a vector of the output depth and dtype) or the convolution is not done by
    blocks, (the Conv2D's value, False): the BiasAdd and the Relu then run their own
    kernels, which raise their own errors.  The values are the three kernels' bits: the
    same elementwise operations on the same operands."""
    _check4("input", x)
    _check4("filter", f)
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


def _sizes(v: Any, what: str) -> tuple[int, ...]:
    s = tuple(int(d) for d in np.asarray(v.get() if hasattr(v, "get") else v).reshape(-1))  # cupy: to host
    if len(s) != 4:
        raise _invalid(f"{what} must be a 4-vector, got {len(s)} values")
    return s


def check_out_backprop(who: str, dy: Any, want: tuple[int, ...],
                       note: str = " (computed from the input and filter)") -> None:
    """A backprop kernel's out_backprop must have the forward output's shape `want`."""
    if tuple(dy.shape) != want:
        raise _invalid(f"{who}: out_backprop has shape {list(dy.shape)}, expected {list(want)}{note}")


@kernel("Conv2DBackpropInput", expensive=True, host_memory=("input_sizes",))
def conv2d_backprop_input(ctx: Any, sizes: Any, f: Any, dy: Any) -> Any:
    xp = ctx.xp
    _check4("filter", f)
    _check4("out_backprop", dy)
    in_shape = _sizes(sizes, "input_sizes")
    geo, g = _conv_setup(ctx, in_shape, f.shape)
    dtype = dy.dtype
    ct = _compute_dtype(dtype)
    dy = _nhwc(dy, geo.nchw).astype(ct, copy=False)
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
            return _finish(xp, dx, dtype, geo.nchw)
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
    return _finish(xp, dx, dtype, geo.nchw)


@kernel("Conv2DBackpropFilter", expensive=True, host_memory=("filter_sizes",))
def conv2d_backprop_filter(ctx: Any, x: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    _check4("input", x)
    _check4("out_backprop", dy)
    f_shape = _sizes(sizes, "filter_sizes")
    geo, g = _conv_setup(ctx, x.shape, f_shape)
    dtype = x.dtype
    ct = _compute_dtype(dtype)
    x = _nhwc(x, geo.nchw).astype(ct, copy=False)
    dy = _nhwc(dy, geo.nchw).astype(ct, copy=False)
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


# --- pooling ---------------------------------------------------------------------------
def _pool_setup(ctx: Any, shape: tuple[int, ...]) -> _Geometry:
    fmt = ctx.attrs["data_format"]
    ksize = list(ctx.attrs["ksize"])
    c = 1 if fmt == "NCHW" else 3
    if ksize[0] != 1 or ksize[c] != 1:
        raise _invalid("Pooling is not yet supported on the batch or depth dimension.")
    k = spatial(ksize, fmt)
    if min(k) < 1:
        raise _invalid(f"Sliding window ksize must be positive, got {ksize}")
    nchw = fmt == "NCHW"
    hw = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    return _Geometry(ctx.attrs, hw, k, dilated=False)


def _lowest(dtype: Any) -> Any:
    if np.issubdtype(dtype, np.floating):
        return -np.inf
    return np.iinfo(dtype).min


@kernel("MaxPool")
def max_pool(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _check4("input", x)
    geo = _pool_setup(ctx, x.shape)
    dtype = x.dtype
    xpad = geo.padded(xp, _nhwc(x, geo.nchw), _lowest(dtype))
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
    return _finish(xp, y, dtype, geo.nchw)


def _counts(xp: Any, geo: _Geometry, h: int, w: int, dtype: Any) -> Any:
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
    _check4("input", x)
    geo = _pool_setup(ctx, x.shape)
    dtype = x.dtype
    if dtype == np.float16:
        # TensorFlow's CPU kernel sums a window in half precision, tap by tap in row-major
        # order, and divides in half: rounding after each addition (bit-checked vs TF 2.21)
        xn = xp.ascontiguousarray(geo.padded(xp, _nhwc(x, geo.nchw)))
        total = None
        for i, j in geo.taps():
            total = geo.tap(xn, i, j) if total is None else total + geo.tap(xn, i, j)
        return _finish(xp, total / _counts(xp, geo, xn.shape[1] - sum(geo.pad[0]), xn.shape[2] - sum(geo.pad[1]),
                                           dtype), dtype, geo.nchw)
    ct = _compute_dtype(dtype)
    xn = _nhwc(x, geo.nchw).astype(ct, copy=False)
    win = geo.windows(xp, xp.ascontiguousarray(geo.padded(xp, xn)))
    total = win.sum(axis=(3, 4))
    return _finish(xp, total / _counts(xp, geo, xn.shape[1], xn.shape[2], ct), dtype, geo.nchw)


@kernel("AvgPoolGrad", host_memory=("orig_input_shape",))
def avg_pool_grad(ctx: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    _check4("grad", dy)
    in_shape = _sizes(sizes, "orig_input_shape")
    geo = _pool_setup(ctx, in_shape)
    dtype = dy.dtype
    ct = _compute_dtype(dtype)
    nhwc_shape = (in_shape[0], in_shape[2], in_shape[3], in_shape[1]) if geo.nchw else in_shape
    dy = _nhwc(dy, geo.nchw).astype(ct, copy=False)
    want = (nhwc_shape[0], geo.out[0], geo.out[1], nhwc_shape[3])
    if tuple(dy.shape) != want:
        raise _invalid(f"AvgPoolGrad: grad has shape {list(dy.shape)}, expected {list(want)}")
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
        return _finish(xp, out[:, pt:pt + nhwc_shape[1], pl:pl + nhwc_shape[2], :], dtype, geo.nchw)
    share = dy / _counts(xp, geo, nhwc_shape[1], nhwc_shape[2], ct)
    cols = xp.broadcast_to(share[:, :, :, None, None, :], want[:3] + geo.k + (want[3],))
    return _finish(xp, geo.col2im(xp, cols, nhwc_shape), dtype, geo.nchw)


def _argmax(ctx: Any, x: Any) -> tuple[_Geometry, Any, Any]:
    """(geometry, padded NHWC input, tap number of each window's maximum).

    TensorFlow's CPU rule: a window's first element inside the input (row-major order)
    starts the maximum and only a strictly greater element replaces it, so a gradient
    goes to the first maximum and padding is never chosen.
    """
    xp = ctx.xp
    geo = _pool_setup(ctx, x.shape)
    xpad = geo.padded(xp, _nhwc(x, geo.nchw))
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


def _disjoint_grad(xp: Any, geo: _Geometry, x: Any, dy: Any) -> Any:
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
    _check4("orig_input", x)
    _check4("grad", dy)
    geo = _pool_setup(ctx, x.shape)
    xn, dyn = _nhwc(x, geo.nchw), _nhwc(dy, geo.nchw)
    want = (xn.shape[0], geo.out[0], geo.out[1], xn.shape[3])
    if dyn.shape != want:
        raise _invalid(f"Expected grad shape to be {list(_back(np.empty(want), geo.nchw).shape)}, "
                       f"but got {list(dy.shape)}")
    ct = _compute_dtype(x.dtype)
    dyn = dyn.astype(ct, copy=False)
    fast = _disjoint_grad(xp, geo, xn, dyn)
    if fast is not None:
        return _finish(xp, fast.astype(ct, copy=False), x.dtype, geo.nchw)
    _, _, idx = _argmax(ctx, x)
    zero = xp.zeros((), dtype=ct)
    taps = geo.taps()

    def routed(i: int, j: int) -> Any:
        return xp.where(idx == taps.index((i, j)), dyn, zero)

    dx = geo.scatter(xp, routed, _nhwc(x, geo.nchw).shape, ct)
    return _finish(xp, dx, x.dtype, geo.nchw)


@kernel("MaxPoolGradGrad")
def max_pool_grad_grad(ctx: Any, x: Any, y: Any, g: Any) -> Any:
    xp = ctx.xp
    _check4("orig_input", x)
    _check4("grad", g)
    if g.shape != x.shape:
        raise _invalid(f"grad must have the shape of orig_input: {list(g.shape)} vs "
                       f"{list(x.shape)}")
    geo, _, idx = _argmax(ctx, x)
    gpad = geo.padded(xp, _nhwc(g, geo.nchw))
    out = xp.zeros(idx.shape, dtype=g.dtype)
    for t, (i, j) in enumerate(geo.taps()):
        xp.copyto(out, geo.tap(gpad, i, j), where=idx == t)
    return _finish(xp, out, g.dtype, geo.nchw)


# --- max pooling with argmax (NHWC only, as TensorFlow) ----------------------------------
def _argmax_attrs(ctx: Any) -> Any:
    return {**ctx.attrs, "data_format": "NHWC"}


class _NHWC:
    """`ctx` seen with data_format NHWC (the argmax ops have no data_format attr)."""

    def __init__(self, ctx: Any) -> None:
        self.xp = ctx.xp
        self.attrs = _argmax_attrs(ctx)


def _flat_argmax(xp: Any, geo: _Geometry, idx: Any, shape: tuple[int, ...], with_batch: bool,
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
    _check4("input", x)
    nctx = _NHWC(ctx)
    y = max_pool(nctx, x)
    geo, _, idx = _argmax(nctx, x)
    return y, _flat_argmax(ctx.xp, geo, idx, x.shape, ctx.attrs["include_batch_in_index"],
                           np.dtype(ctx.attrs["Targmax"].as_numpy_dtype))


@kernel("MaxPoolGradWithArgmax")
def max_pool_grad_with_argmax(ctx: Any, x: Any, dy: Any, argmax: Any) -> Any:
    xp = ctx.xp
    if argmax.dtype != np.int64:  # TensorFlow registers this kernel for int64 indices only
        raise _invalid("No OpKernel was registered to support Op 'MaxPoolGradWithArgmax' with Targmax=DT_INT32")
    _check4("input", x)
    geo = _pool_setup(_NHWC(ctx), x.shape)
    n, h, w, c = x.shape
    want = (n, geo.out[0], geo.out[1], c)
    if tuple(dy.shape) != want or tuple(argmax.shape) != want:
        raise _invalid(f"Expected grad and argmax shape to be {list(want)}, but got {list(dy.shape)} and "
                       f"{list(argmax.shape)}")
    flat = argmax.astype(np.int64)
    if not ctx.attrs["include_batch_in_index"]:
        flat = flat + xp.arange(n, dtype=np.int64)[:, None, None, None] * (h * w * c)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= x.size):
        raise _invalid("Invalid argmax index: out of range of the input")
    ct = _compute_dtype(dy.dtype)
    out = xp.zeros(x.size, dtype=ct)
    if xp is np:
        np.add.at(out, flat.reshape(-1), dy.astype(ct, copy=False).reshape(-1))
    else:
        xp.add.at(out, flat.reshape(-1), dy.astype(ct, copy=False).reshape(-1))
    return out.reshape(x.shape).astype(dy.dtype, copy=False)
