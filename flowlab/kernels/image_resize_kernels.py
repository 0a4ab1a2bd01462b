"""Kernels of the resize ops and their gradients, as TensorFlow's CPU kernels compute them.

Sampling positions, in float32 as TensorFlow: scale = in / out, or (in - 1) / (out - 1)
with align_corners; an output index i samples in * ... at `i * scale` (legacy) or
`(i + 0.5) * scale - 0.5` (half_pixel_centers; nearest neighbour omits the - 0.5).

- Bilinear: lower = max(floor(p), 0), upper = min(ceil(p), in - 1), lerp = p - floor(p);
  top = tl + (tr - tl) * x_lerp, bottom likewise, out = top + (bottom - top) * y_lerp,
  in float32 whatever the input dtype.
- Nearest neighbour: floor(p) (round half away from zero with align_corners), clipped
  to [0, in - 1]; the dtype is kept.
- Bicubic: Keys' cubic kernel through TensorFlow's 1025-entry coefficient table
  (a = -0.75, or a = -0.5 with half_pixel_centers, where out-of-image taps get weight 0
  and the weights are renormalized); each output is the cubic along y at four x taps,
  then along x.
- Area: each output averages the input cells it covers, weighted by the covered
  fraction (TensorFlow's start / middle / end cells, summed along x for each input row,
  then along y, times float32(1 / (scale_y * scale_x))).

The forward bilinear and nearest-neighbour kernels run on CPU and GPU; bicubic, area
and the gradients (np.add.at) run on CPU.  The gradients scatter `grad * weight` back in TensorFlow's loop order (output row,
column, then tap), so their sums round as TensorFlow's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_F32 = np.float32
_TABLE_SIZE = 1024


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return _F32(in_size - 1) / _F32(out_size - 1)
    return _F32(in_size) / _F32(out_size)


def _positions(out_size: int, scale: np.float32, half_pixel: bool, nn: bool = False) -> np.ndarray:
    i = np.arange(out_size, dtype=_F32)
    if not half_pixel:
        return i * scale
    p = (i + _F32(0.5)) * scale
    return p if nn else p - _F32(0.5)


def _check_resize(ctx: Any, images: Any, size: Any) -> tuple[int, int]:
    a = ctx.attrs
    if a.get("half_pixel_centers") and a.get("align_corners"):
        raise errors.InvalidArgumentError(None, None, "If half_pixel_centers is True, align_corners must be False.")
    if images.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"input must be 4-dimensional{list(images.shape)}")
    size = np.asarray(size)
    if size.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"shape_t must be 1-dimensional{list(size.shape)}")
    if size.shape[0] != 2:
        raise errors.InvalidArgumentError(None, None, f"shape_t must have two elements{list(size.shape)}")
    out_h, out_w = int(size[0]), int(size[1])
    if out_h <= 0 or out_w <= 0:
        raise errors.InvalidArgumentError(None, None, "output dimensions must be positive")
    if images.shape[1] <= 0 or images.shape[2] <= 0:
        raise errors.InvalidArgumentError(None, None, f"input image must be of non-zero size{list(images.shape)}")
    return out_h, out_w


# --- bilinear -----------------------------------------------------------------------
def _linear_weights(in_size: int, out_size: int, ctx: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = ctx.attrs
    p = _positions(out_size, _scale(in_size, out_size, a["align_corners"]), a["half_pixel_centers"])
    f = np.floor(p)
    lower = np.maximum(f.astype(np.int64), 0)
    upper = np.minimum(np.ceil(p).astype(np.int64), in_size - 1)
    return lower, upper, (p - f).astype(_F32)


@kernel("ResizeBilinear", host_memory=("size",))
def resize_bilinear(ctx: Any, images: Any, size: Any) -> Any:
    xp = ctx.xp
    out_h, out_w = _check_resize(ctx, images, size)
    _, in_h, in_w, _ = images.shape
    y0, y1, yl = (xp.asarray(v) for v in _linear_weights(in_h, out_h, ctx))
    x0, x1, xl = (xp.asarray(v) for v in _linear_weights(in_w, out_w, ctx))
    img = images.astype(_F32, copy=False)
    top_rows, bottom_rows = img[:, y0], img[:, y1]
    xl = xl[None, None, :, None]
    top = top_rows[:, :, x0] + (top_rows[:, :, x1] - top_rows[:, :, x0]) * xl
    bottom = bottom_rows[:, :, x0] + (bottom_rows[:, :, x1] - bottom_rows[:, :, x0]) * xl
    return top + (bottom - top) * yl[None, :, None, None]


def _scatter(out: Any, rows: list[Any], cols: list[Any], values: list[Any]) -> Any:
    """out[b, rows[k][y], cols[k][x], c] += values[k][b, y, x, c], k fastest after x."""
    b, h, w, c = out.shape
    gb, gy, gx = values[0].shape[:3]
    flat_targets = []
    for r, cl in zip(rows, cols):
        t = (np.arange(gb)[:, None, None] * h + np.asarray(r)[None, :, None]) * w + np.asarray(cl)[None, None, :]
        flat_targets.append(t)
    idx = np.stack(flat_targets, axis=3)  # [b, y, x, k]
    idx = (idx[..., None] * c + np.arange(c)).reshape(-1)
    vals = np.stack(values, axis=3).reshape(-1)
    flat = out.reshape(-1)
    np.add.at(flat, idx, vals)
    return flat.reshape(out.shape)


@kernel("ResizeBilinearGrad", devices=CPU)
def resize_bilinear_grad(ctx: Any, grads: Any, original: Any) -> Any:
    if grads.ndim != 4 or original.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"input_grad must be 4-dimensional{list(grads.shape)}")
    if grads.shape[0] != original.shape[0] or grads.shape[3] != original.shape[3]:
        raise errors.InvalidArgumentError(None, None, "input_grad and original_image must agree in batch and depth")
    _, in_h, in_w, _ = original.shape
    _, out_h, out_w, _ = grads.shape
    y0, y1, yl = _linear_weights(in_h, out_h, ctx)
    x0, x1, xl = _linear_weights(in_w, out_w, ctx)
    g = np.asarray(grads, dtype=_F32)
    yl4, xl4 = yl[None, :, None, None], xl[None, None, :, None]
    iy, ix = _F32(1) - yl4, _F32(1) - xl4
    dt = original.dtype
    vals = [(g * iy * ix).astype(dt), (g * iy * xl4).astype(dt), (g * yl4 * ix).astype(dt), (g * yl4 * xl4).astype(dt)]
    out = np.zeros(original.shape, dtype=dt)
    return _scatter(out, [y0, y0, y1, y1], [x0, x1, x0, x1], vals)


# --- nearest neighbour -----------------------------------------------------------------
def _round_half_away(p: np.ndarray) -> np.ndarray:
    f = np.floor(p)
    return np.where(p - f >= _F32(0.5), f + 1, f)


def _nearest(in_size: int, out_size: int, align: bool, half_pixel: bool) -> np.ndarray:
    p = _positions(out_size, _scale(in_size, out_size, align), half_pixel, nn=True)
    idx = (_round_half_away(p) if align else np.floor(p)).astype(np.int64)
    idx = np.minimum(idx, in_size - 1)
    return np.maximum(idx, 0) if half_pixel else idx


@kernel("ResizeNearestNeighbor", host_memory=("size",))
def resize_nearest_neighbor(ctx: Any, images: Any, size: Any) -> Any:
    out_h, out_w = _check_resize(ctx, images, size)
    a = ctx.attrs
    ys = ctx.xp.asarray(_nearest(images.shape[1], out_h, a["align_corners"], a["half_pixel_centers"]))
    xs = ctx.xp.asarray(_nearest(images.shape[2], out_w, a["align_corners"], a["half_pixel_centers"]))
    return images[:, ys][:, :, xs]


@kernel("ResizeNearestNeighborGrad", devices=CPU, host_memory=("size",))
def resize_nearest_neighbor_grad(ctx: Any, grads: Any, size: Any) -> Any:
    if grads.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"input must be 4-dimensional{list(grads.shape)}")
    size = np.asarray(size)
    if size.shape != (2,):
        raise errors.InvalidArgumentError(None, None, f"shape_t must have two elements{list(size.shape)}")
    out_h, out_w = int(size[0]), int(size[1])
    b, in_h, in_w, c = grads.shape
    a = ctx.attrs
    # The adjoint of the forward op that maps [out_h, out_w] images to [in_h, in_w].
    ys = _nearest(out_h, in_h, a["align_corners"], a["half_pixel_centers"])
    xs = _nearest(out_w, in_w, a["align_corners"], a["half_pixel_centers"])
    out = np.zeros((b, out_h, out_w, c), dtype=grads.dtype)
    return _scatter(out, [ys], [xs], [np.asarray(grads)])


# --- bicubic -----------------------------------------------------------------------------
@lru_cache(maxsize=2)
def _coeffs_table(keys: bool) -> np.ndarray:
    a = -0.5 if keys else -0.75
    table = np.empty((_TABLE_SIZE + 1, 2), dtype=_F32)
    for i in range(_TABLE_SIZE + 1):
        x = float(_F32(i * 1.0 / _TABLE_SIZE))
        table[i, 0] = ((a + 2) * x - (a + 3)) * x * x + 1
        x = float(_F32(x + 1.0))
        table[i, 1] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return table


def _cubic_weights(in_size: int, out_size: int, ctx: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    a = ctx.attrs
    keys = bool(a["half_pixel_centers"])
    p = _positions(out_size, _scale(in_size, out_size, a["align_corners"]), keys)
    loc = np.floor(p).astype(np.int64)
    delta = (p - loc.astype(_F32)).astype(_F32)
    offset = np.rint(delta * _F32(_TABLE_SIZE)).astype(np.int64)
    t = _coeffs_table(keys)
    raw = [t[offset, 1], t[offset, 0], t[_TABLE_SIZE - offset, 0], t[_TABLE_SIZE - offset, 1]]
    taps = [loc - 1, loc, loc + 1, loc + 2]
    idx = [np.clip(k, 0, in_size - 1) for k in taps]
    if not keys:
        return raw, idx
    w = [np.where(i == k, r, _F32(0)).astype(_F32) for i, k, r in zip(idx, taps, raw)]
    total = ((w[0] + w[1]) + w[2]) + w[3]
    ok = np.abs(total) >= _F32(1000.0) * np.finfo(_F32).tiny
    inv = np.where(ok, _F32(1) / np.where(ok, total, _F32(1)), _F32(1)).astype(_F32)
    return [np.where(ok, wi * inv, wi).astype(_F32) for wi in w], idx


@kernel("ResizeBicubic", devices=CPU, host_memory=("size",))
def resize_bicubic(ctx: Any, images: Any, size: Any) -> Any:
    out_h, out_w = _check_resize(ctx, images, size)
    _, in_h, in_w, _ = images.shape
    yw, yi = _cubic_weights(in_h, out_h, ctx)
    xw, xi = _cubic_weights(in_w, out_w, ctx)
    img = np.asarray(images).astype(_F32, copy=False)
    out = None
    for j in range(4):  # the four x taps, each interpolated along y first
        cols = img[:, :, xi[j]]  # [b, in_h, out_w, c]
        col = cols[:, yi[0]] * yw[0][None, :, None, None]
        for k in range(1, 4):
            col = col + cols[:, yi[k]] * yw[k][None, :, None, None]
        term = col * xw[j][None, None, :, None]
        out = term if out is None else out + term
    return out


@kernel("ResizeBicubicGrad", devices=CPU)
def resize_bicubic_grad(ctx: Any, grads: Any, original: Any) -> Any:
    if grads.ndim != 4 or original.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"input_grad must be 4-dimensional{list(grads.shape)}")
    _, in_h, in_w, _ = original.shape
    _, out_h, out_w, _ = grads.shape
    yw, yi = _cubic_weights(in_h, out_h, ctx)
    xw, xi = _cubic_weights(in_w, out_w, ctx)
    dt = original.dtype
    g = np.asarray(grads).astype(dt)  # TensorFlow multiplies in the image's dtype here
    rows, cols, vals = [], [], []
    for j in range(4):
        for k in range(4):
            rows.append(yi[j])
            cols.append(xi[k])
            vals.append((g * yw[j][None, :, None, None] * xw[k][None, None, :, None]).astype(dt))
    out = np.zeros(original.shape, dtype=dt)
    return _scatter(out, rows, cols, vals)


# --- area ----------------------------------------------------------------------------------
def _area_terms(in_size: int, out_size: int, scale: np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output index: the input indices it covers (bounded), their float32 coverage
    weights and a validity mask, padded to the longest run (TensorFlow's start / middle /
    end-minus-one cells; a middle cell's weight is 1)."""
    runs = []
    for o in range(out_size):
        lo = _F32(o) * scale
        hi = _F32(o + 1) * scale
        start, end = int(np.floor(lo)), int(np.ceil(hi))
        cells = []
        for i in range(start, end):
            if _F32(i) < lo:
                w = scale if _F32(i + 1) > hi else _F32(i + 1) - lo
            else:
                w = hi - _F32(i) if _F32(i + 1) > hi else _F32(1)
            cells.append((min(in_size - 1, max(0, i)), _F32(w)))
        runs.append(cells)
    width = max(len(r) for r in runs)
    idx = np.zeros((out_size, width), np.int64)
    wts = np.zeros((out_size, width), _F32)
    valid = np.zeros((out_size, width), bool)
    for o, cells in enumerate(runs):
        for m, (i, w) in enumerate(cells):
            idx[o, m], wts[o, m], valid[o, m] = i, w, True
    return idx, wts, valid


@kernel("ResizeArea", devices=CPU, host_memory=("size",))
def resize_area(ctx: Any, images: Any, size: Any) -> Any:
    out_h, out_w = _check_resize(ctx, images, size)
    _, in_h, in_w, _ = images.shape
    align = ctx.attrs["align_corners"]
    hs, ws = _scale(in_h, out_h, align), _scale(in_w, out_w, align)
    img = np.asarray(images).astype(_F32, copy=False)
    xi, xw, xv = _area_terms(in_w, out_w, ws)
    yi, yw, yv = _area_terms(in_h, out_h, hs)
    # Each input row's sum over the x cells, in TensorFlow's order, then over the y cells.
    sx = img[:, :, xi[:, 0]] * xw[None, None, :, 0, None]
    for m in range(1, xi.shape[1]):
        sx = np.where(xv[None, None, :, m, None], sx + img[:, :, xi[:, m]] * xw[None, None, :, m, None], sx)
    total = sx[:, yi[:, 0]] * yw[None, :, 0, None, None]
    for m in range(1, yi.shape[1]):
        total = np.where(yv[None, :, m, None, None], total + sx[:, yi[:, m]] * yw[None, :, m, None, None], total)
    scale = _F32(1.0 / float(hs * ws))
    return (total * scale).astype(_F32)
