"""How a NumPy convolution's GEMMs are cut into blocks of images.

Two cuts, one inside the other:

* *Thread blocks* (`image_blocks`): with two or more intra-op threads
  (flowlab.runtime.thread_policy) the images are shared out among them in a few
  contiguous blocks, taken from one queue (`intra_op.run_blocks`).
* *Cache blocks* (`cache_images`): inside a thread block, im2col and the GEMM run a few
  images at a time, so that the column matrix of one cache block (about `CACHE_BYTES`)
  is still in the cache when the GEMM reads it, instead of a whole batch's column
  matrix going out to memory and coming back.  cnn_train's second convolution (64
  images of 14x14x32, 5x5x32x64 filter, one thread, AMD EPYC with AVX2): forward 25.0
  -> 15.6 ms, filter backprop 25.0 -> 16.5 ms; the input backprop as a correlation of
  the padded out_backprop 35.5 (whole batch) -> 19.2 ms, against 21.3 for the per-tap
  GEMMs it replaces at stride 1.  Blocks of 8 images or more (5 MB of columns) lose
  the gain.

Partial sums (the filter backprop) are added in image order whatever the thread
timing, so a result depends on the thread count only through the block bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.kernels import intra_op
from flowlab.kernels.intra_op import row_blocks, run_blocks

# Columns of one cache block, in bytes (see the module docstring for the measurement).
CACHE_BYTES = 2 << 20


def image_blocks(n: int, work: int) -> list[int]:
    """Bounds of the blocks of images that the intra-op threads share in a convolution
    of `work` multiply-adds: [0, n] (one block) when sharing would not pay."""
    threads = intra_op.intra_op_threads()
    if threads < 2 or n < 2 or work < intra_op.SHARD_MIN_WORK:
        return [0, n]
    step = -(-n // min(2 * threads, n))
    return list(range(0, n, step)) + [n]


def cache_images(rows_per_image: int, cols: int, itemsize: int) -> int:
    """Images per cache block: as many as keep their column matrix within CACHE_BYTES."""
    return max(1, CACHE_BYTES // max(1, rows_per_image * cols * itemsize))


def _sub_blocks(lo: int, hi: int, step: int) -> list[tuple[int, int]]:
    return [(s, min(hi, s + step)) for s in range(lo, hi, step)]


def _each_block(bounds: list[int], step: int, fn: Callable[[int, int], None]) -> None:
    """`fn(lo, hi)` for every cache block of every thread block, the thread blocks on
    the intra-op threads and the cache blocks of one thread block in order."""
    def thread_block(b: int) -> None:
        for lo, hi in _sub_blocks(bounds[b], bounds[b + 1], step):
            fn(lo, hi)

    run_blocks(len(bounds) - 1, thread_block)


def _columns(win: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The [rows, kh*kw*c] column matrix (im2col) of images lo:hi of the window view.

    A copy of the 6-d view, except for a single input channel (a grayscale image's
    first layer): then the copy would move one float per inner step, so the columns
    are built tap by tap, whole output rows at a time, into a [kh*kw, rows] buffer
    that is returned transposed (GEMMs take it as it is).  cnn_train's first layer:
    0.4 against 1.6 ms."""
    n, oh, ow, kh, kw, c = win.shape
    if c != 1:
        return win[lo:hi].reshape((hi - lo) * oh * ow, kh * kw * c)
    buf = np.empty((kh, kw, hi - lo, oh, ow), win.dtype)
    for i in range(kh):
        for j in range(kw):
            buf[i, j] = win[lo:hi, :, :, i, j, 0]
    return buf.reshape(kh * kw, (hi - lo) * oh * ow).T


def forward(win: np.ndarray, f2: np.ndarray, bounds: list[int],
            epilogue: Callable[[np.ndarray], None] | None = None) -> np.ndarray:
    """[n*oh*ow, o] = im2col(win) @ f2, where `win` is the [n, oh, ow, kh, kw, c] window
    view of the padded input and f2 the [kh*kw*c, o] filter.  `epilogue(rows)`, when
    given, then updates each cache block's [rows, o] output in place while it is in
    the cache (conv_kernels.conv2d_bias_relu)."""
    n, oh, ow = win.shape[:3]
    r, k = oh * ow, f2.shape[0]
    y = np.empty((n * r, f2.shape[1]), np.result_type(win.dtype, f2.dtype))

    def block(lo: int, hi: int) -> None:
        out = y[lo * r:hi * r]
        np.matmul(_columns(win, lo, hi), f2, out=out)
        if epilogue is not None:
            epilogue(out)

    _each_block(bounds, cache_images(r, k, win.itemsize), block)
    return y


def filter_grad(win: np.ndarray, dy2: np.ndarray, bounds: list[int]) -> np.ndarray:
    """[kh*kw*c, o] = im2col(win)^T @ dy2, summed over cache blocks in image order
    within each thread block, then over thread blocks in order."""
    n, oh, ow = win.shape[:3]
    r, k = oh * ow, int(np.prod(win.shape[3:]))
    parts: list[Any] = [None] * (len(bounds) - 1)
    step = cache_images(r, k, win.itemsize)

    def thread_block(b: int) -> None:
        acc = None
        for lo, hi in _sub_blocks(bounds[b], bounds[b + 1], step):
            p = np.matmul(_columns(win, lo, hi).T, dy2[lo * r:hi * r])
            if acc is None:
                acc = p
            else:
                acc += p
        parts[b] = acc

    run_blocks(len(parts), thread_block)
    df = parts[0]
    for p in parts[1:]:
        df += p
    return df


def input_grad_by_correlation(geo: Any, dy: np.ndarray, f: np.ndarray, in_shape: tuple[int, ...],
                              bounds: list[int]) -> np.ndarray | None:
    """The input gradient of a stride-1 convolution as a correlation of out_backprop,
    zero padded, with the flipped filter: one more convolution forward, by blocks.

    dx[h] = sum_i dy[h + pt - i*d] f[i] = sum_i' dyp[h + i'*d] f[k-1-i'] with dy padded
    by ke-1-pt before and ke-1-pb after (ke = (k-1)*d + 1, the dilated kernel size).
    None when it does not apply (strides, or padding wider than the dilated kernel,
    or zero-sized dimensions): the caller takes the per-tap GEMMs then.

    `geo` is the window geometry (flowlab.kernels.window_geometry) of the forward convolution; dy NHWC
    [n, oh, ow, o]; f [kh, kw, c, o]; in_shape the NHWC input shape.
    """
    if geo.s != (1, 1) or 0 in dy.shape or 0 in in_shape:
        return None
    n, h, w, c = in_shape
    kh, kw, _, o = f.shape
    (pt, pb), (pl, pr) = geo.pad
    (dh, dw) = geo.d
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    before_h, after_h, before_w, after_w = eh - 1 - pt, eh - 1 - pb, ew - 1 - pl, ew - 1 - pr
    if min(before_h, after_h, before_w, after_w) < 0:
        return None
    oh, ow = geo.out
    dyp = np.zeros((n, oh + before_h + after_h, ow + before_w + after_w, o), dy.dtype)
    dyp[:, before_h:before_h + oh, before_w:before_w + ow, :] = dy
    sn, sh, sw, sc = dyp.strides
    win = np.lib.stride_tricks.as_strided(dyp, (n, h, w, kh, kw, o), (sn, sh, sw, sh * dh, sw * dw, sc),
                                          writeable=False)
    flipped = np.ascontiguousarray(f[::-1, ::-1].transpose(0, 1, 3, 2)).reshape(kh * kw * o, c)
    return forward(win, flipped, bounds).reshape(n, h, w, c)


def per_tap(dy2: np.ndarray, ft: np.ndarray) -> np.ndarray:
    """[kk, m, c] = dy2 [m, o] @ ft [kk, o, c] for every tap, the rows of dy2 shared
    out among the intra-op threads (flowlab.kernels.intra_op.run_blocks)."""
    m, o = dy2.shape
    kk, _, c = ft.shape
    bounds = row_blocks(m, m * o * kk * c)
    if len(bounds) == 2 or dy2.dtype != ft.dtype:
        return np.matmul(dy2, ft)
    out = np.empty((kk, m, c), dy2.dtype)

    def block(i: int) -> None:
        lo, hi = bounds[i], bounds[i + 1]
        np.matmul(dy2[lo:hi], ft, out=out[:, lo:hi])

    run_blocks(len(bounds) - 1, block)
    return out


def input_grad_by_taps(geo: Any, bounds: list[int], dy2: np.ndarray, ft: np.ndarray,
                       in_shape: tuple[int, ...], ct: Any) -> np.ndarray:
    """The input gradient by thread blocks of images: per block, the per-tap GEMMs of
    its rows of out_backprop, then its col2im into its own images of the padded
    gradient (blocks write disjoint images).  Any strides."""
    n, h, w, c = in_shape
    (pt, pb), (pl, pr) = geo.pad
    (oh, ow), (kh, kw), r = geo.out, geo.k, geo.out[0] * geo.out[1]
    out = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=ct)

    def block(b: int) -> None:
        lo, hi = bounds[b], bounds[b + 1]
        taps = np.matmul(dy2[lo * r:hi * r], ft).reshape(kh, kw, hi - lo, oh, ow, c)
        mine = out[lo:hi]
        for i, j in geo.taps():
            dst = geo.tap(mine, i, j)
            dst += taps[i, j]

    run_blocks(len(bounds) - 1, block)
    return out[:, pt:pt + h, pl:pl + w, :]
