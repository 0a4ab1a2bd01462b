"""Kernels of Dilation2D and its backprops (flowlab.ops.morphology_ops): one pass over
the filter cells, keeping the running maximum and where it came from (the first
maximum wins, as TensorFlow's strict `>`); the backprops add each output gradient
at those cells."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.registry import CPU, kernel
from flowlab.ops.morphology_ops import window


def _forward(ctx: Any, x: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    s, r, pad = ctx.attrs["strides"], ctx.attrs["rates"], ctx.attrs["padding"]
    b, h, w, c = x.shape
    fh, fw, _ = f.shape
    oh, top = window(h, fh, s[1], r[1], pad)
    ow, left = window(w, fw, s[2], r[2], pad)
    best = np.full((b, oh, ow, c), -np.inf)
    arg_y = np.zeros((b, oh, ow, c), np.int64)
    arg_x = np.zeros((b, oh, ow, c), np.int64)
    ys = np.arange(oh) * s[1] - top
    xs = np.arange(ow) * s[2] - left
    for dy in range(fh):
        for dx in range(fw):
            yy, xx = ys + dy * r[1], xs + dx * r[2]
            ok = ((yy >= 0) & (yy < h))[:, None] & ((xx >= 0) & (xx < w))[None, :]
            vals = x[:, np.clip(yy, 0, h - 1)][:, :, np.clip(xx, 0, w - 1)].astype(np.float64) + f[dy, dx]
            vals = np.where(ok[None, :, :, None], vals, -np.inf)
            better = vals > best
            best = np.where(better, vals, best)
            arg_y = np.where(better, dy, arg_y)
            arg_x = np.where(better, dx, arg_x)
    return best, arg_y, arg_x, (ys, xs, r)


@kernel("Dilation2D", devices=CPU)
def dilation2d(ctx: Any, input: Any, filter: Any) -> Any:  # noqa: A002
    x, f = np.asarray(input), np.asarray(filter)
    best, _, _, _ = _forward(ctx, x, f)
    return best.astype(x.dtype)


@kernel("Dilation2DBackpropInput", devices=CPU)
def dilation2d_backprop_input(ctx: Any, input: Any, filter: Any, out_backprop: Any) -> Any:  # noqa: A002
    x, f, g = np.asarray(input), np.asarray(filter), np.asarray(out_backprop)
    _, ay, ax, (ys, xs, r) = _forward(ctx, x, f)
    out = np.zeros(x.shape, np.float64)
    b, oh, ow, c = g.shape
    bi, yi, xi, ci = np.meshgrid(np.arange(b), np.arange(oh), np.arange(ow), np.arange(c), indexing="ij")
    iy = ys[yi] + ay * r[1]
    ix = xs[xi] + ax * r[2]
    np.add.at(out, (bi.ravel(), iy.ravel(), ix.ravel(), ci.ravel()), g.ravel().astype(np.float64))
    return out.astype(x.dtype)


@kernel("Dilation2DBackpropFilter", devices=CPU)
def dilation2d_backprop_filter(ctx: Any, input: Any, filter: Any, out_backprop: Any) -> Any:  # noqa: A002
    x, f, g = np.asarray(input), np.asarray(filter), np.asarray(out_backprop)
    _, ay, ax, _ = _forward(ctx, x, f)
    out = np.zeros(f.shape, np.float64)
    c = g.shape[3]
    ci = np.broadcast_to(np.arange(c), g.shape)
    np.add.at(out, (ay.ravel(), ax.ravel(), ci.ravel()), g.ravel().astype(np.float64))
    return out.astype(f.dtype)
