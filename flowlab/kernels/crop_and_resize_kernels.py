"""Kernels of CropAndResize and its gradients (TensorFlow's CPU kernels, float32 arithmetic).

Each box (y1, x1, y2, x2, normalized) samples crop_height x crop_width points: row y at
y1 * (H - 1) + y * (y2 - y1) * (H - 1) / (crop_height - 1) (the box centre, computed in
double, when crop_height is 1), columns likewise; points outside the image take the
extrapolation value; inside, bilinear (TensorFlow's lerp order) or nearest (round half
away from zero).  The image gradient scatters the bilinear weights back (in box, row,
column order); the boxes' gradient sums, per box in (row, column, channel) order, the
image's finite differences times the position derivatives, as TensorFlow's loop does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_F32 = np.float32


def _positions(lo: np.float32, hi: np.float32, size: int, crop: int, via_ratio: bool = False) -> np.ndarray:
    """The sampling rows (or columns) of a box; `via_ratio`: the boxes' gradient scales
    (hi - lo) by float32((size - 1) / (crop - 1)) first, as TensorFlow's does."""
    if crop > 1:
        if via_ratio:
            scale = _F32(hi - lo) * (_F32(size - 1) / _F32(crop - 1))
        else:
            scale = _F32(_F32(hi - lo) * _F32(size - 1)) / _F32(crop - 1)
        return _F32(lo * _F32(size - 1)) + np.arange(crop, dtype=_F32) * scale
    return np.array([_F32(0.5 * (float(lo) + float(hi)) * (size - 1))], dtype=_F32)


def _check(image: Any, boxes: Any, box_ind: Any, crop_size: Any) -> tuple[int, int]:
    if np.asarray(image).ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"input image must be 4-D{list(np.shape(image))}")
    boxes, box_ind = np.asarray(boxes), np.asarray(box_ind)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise errors.InvalidArgumentError(None, None, f"boxes must be 2-D{list(boxes.shape)}")
    if box_ind.ndim != 1 or box_ind.shape[0] != boxes.shape[0]:
        raise errors.InvalidArgumentError(None, None, "box_index has incompatible shape")
    size = np.asarray(crop_size)
    if size.shape != (2,):
        raise errors.InvalidArgumentError(None, None, f"crop_size must be 1-D with 2 elements: {list(size.shape)}")
    ch, cw = int(size[0]), int(size[1])
    if ch <= 0 or cw <= 0:
        raise errors.InvalidArgumentError(None, None, "crop dimensions must be positive")
    batch = np.shape(image)[0]
    bad = (box_ind < 0) | (box_ind >= batch)
    if bad.any():
        raise errors.InvalidArgumentError(None, None, f"box_index has values outside [0, {batch})")
    return ch, cw


def _round_half_away(p: np.ndarray) -> np.ndarray:
    f = np.floor(p)
    return np.where(p - f >= _F32(0.5), f + 1, f).astype(np.int64)


@kernel("CropAndResize", devices=CPU, host_memory=("crop_size",))
def crop_and_resize(ctx: Any, image: Any, boxes: Any, box_ind: Any, crop_size: Any) -> Any:
    ch, cw = _check(image, boxes, box_ind, crop_size)
    img = np.asarray(image)
    _, h, w, d = img.shape
    boxes = np.asarray(boxes, dtype=_F32)
    extrapolation = _F32(ctx.attrs.get("extrapolation_value", 0.0))
    nearest = ctx.attrs.get("method", "bilinear") == "nearest"
    out = np.empty((boxes.shape[0], ch, cw, d), dtype=_F32)
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        src = img[int(box_ind[b])].astype(_F32)
        ys, xs = _positions(y1, y2, h, ch), _positions(x1, x2, w, cw)
        yok, xok = (ys >= 0) & (ys <= h - 1), (xs >= 0) & (xs <= w - 1)
        yc, xc = np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)
        if nearest:
            vals = src[_round_half_away(yc)][:, _round_half_away(xc)]
        else:
            top, bottom = np.floor(yc).astype(np.int64), np.ceil(yc).astype(np.int64)
            left, right = np.floor(xc).astype(np.int64), np.ceil(xc).astype(np.int64)
            yl = (yc - top.astype(_F32))[:, None, None]
            xl = (xc - left.astype(_F32))[None, :, None]
            tl, tr = src[top][:, left], src[top][:, right]
            bl, br = src[bottom][:, left], src[bottom][:, right]
            t = tl + (tr - tl) * xl
            bo = bl + (br - bl) * xl
            vals = t + (bo - t) * yl
        out[b] = np.where((yok[:, None] & xok[None, :])[..., None], vals, extrapolation)
    return out


@kernel("CropAndResizeGradImage", devices=CPU, host_memory=("image_size",))
def crop_and_resize_grad_image(ctx: Any, grads: Any, boxes: Any, box_ind: Any, image_size: Any) -> Any:
    size = np.asarray(image_size)
    if size.shape != (4,):
        raise errors.InvalidArgumentError(None, None, f"image_size must be 1-D with 4 elements: {list(size.shape)}")
    batch, h, w, d = (int(v) for v in size)
    dt = ctx.attrs["T"].as_numpy_dtype if hasattr(ctx.attrs["T"], "as_numpy_dtype") else ctx.attrs["T"]
    g = np.asarray(grads, dtype=_F32)
    _, ch, cw, _ = g.shape
    boxes = np.asarray(boxes, dtype=_F32)
    nearest = ctx.attrs.get("method", "bilinear") == "nearest"
    out = np.zeros((batch, h, w, d), dtype=dt)
    flat = out.reshape(-1)
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        base = int(box_ind[b]) * h
        ys, xs = _positions(y1, y2, h, ch), _positions(x1, x2, w, cw)
        idx, vals = [], []
        for y in range(ch):
            if not 0 <= ys[y] <= h - 1:
                continue
            top, bottom = int(np.floor(ys[y])), int(np.ceil(ys[y]))
            yl = _F32(ys[y] - _F32(top))
            for x in range(cw):
                if not 0 <= xs[x] <= w - 1:
                    continue
                gv = g[b, y, x]
                if nearest:
                    cy, cx = int(_round_half_away(ys[y:y + 1])[0]), int(_round_half_away(xs[x:x + 1])[0])
                    idx.append(((base + cy) * w + cx) * d + np.arange(d))
                    vals.append(gv.astype(dt))
                    continue
                left, right = int(np.floor(xs[x])), int(np.ceil(xs[x]))
                xl = _F32(xs[x] - _F32(left))
                dtop = (_F32(1) - yl) * gv
                dbottom = yl * gv
                for row, col, v in ((top, left, (_F32(1) - xl) * dtop), (top, right, xl * dtop),
                                    (bottom, left, (_F32(1) - xl) * dbottom), (bottom, right, xl * dbottom)):
                    idx.append(((base + row) * w + col) * d + np.arange(d))
                    vals.append(v.astype(dt))
        if idx:
            np.add.at(flat, np.concatenate(idx), np.concatenate(vals))
    return out


@kernel("CropAndResizeGradBoxes", devices=CPU)
def crop_and_resize_grad_boxes(ctx: Any, grads: Any, image: Any, boxes: Any, box_ind: Any) -> Any:
    img = np.asarray(image)
    _, h, w, d = img.shape
    g = np.asarray(grads, dtype=_F32)
    _, ch, cw, _ = g.shape
    boxes = np.asarray(boxes, dtype=_F32)
    out = np.zeros((boxes.shape[0], 4), dtype=_F32)
    hr = _F32(h - 1) / _F32(ch - 1) if ch > 1 else _F32(0)
    wr = _F32(w - 1) / _F32(cw - 1) if cw > 1 else _F32(0)
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        src = img[int(box_ind[b])].astype(_F32)
        ys, xs = _positions(y1, y2, h, ch, via_ratio=True), _positions(x1, x2, w, cw, via_ratio=True)
        acc: list[Any] = [_F32(0)] * 4
        for y in range(ch):
            if not 0 <= ys[y] <= h - 1:
                continue
            top, bottom = int(np.floor(ys[y])), int(np.ceil(ys[y]))
            yl = _F32(ys[y] - _F32(top))
            for x in range(cw):
                if not 0 <= xs[x] <= w - 1:
                    continue
                left, right = int(np.floor(xs[x])), int(np.ceil(xs[x]))
                xl = _F32(xs[x] - _F32(left))
                tl, tr, bl, br = src[top, left], src[top, right], src[bottom, left], src[bottom, right]
                gy = ((_F32(1) - xl) * (bl - tl) + xl * (br - tr)) * g[b, y, x]
                gx = ((_F32(1) - yl) * (tr - tl) + yl * (br - bl)) * g[b, y, x]
                if ch > 1:
                    t0, t2 = gy * (_F32(h - 1) - _F32(y) * hr), gy * (_F32(y) * hr)
                else:
                    t0 = t2 = gy.astype(np.float64) * 0.5 * (h - 1)
                if cw > 1:
                    t1, t3 = gx * (_F32(w - 1) - _F32(x) * wr), gx * (_F32(x) * wr)
                else:
                    t1 = t3 = gx.astype(np.float64) * 0.5 * (w - 1)
                for c in range(d):  # TensorFlow adds channel by channel into float32 sums
                    for k, t in enumerate((t0, t1, t2, t3)):
                        # a float32 sum, or (crop size 1) a double sum rounded to float32
                        acc[k] = _F32(acc[k]) + t[c] if t.dtype == _F32 else _F32(float(acc[k]) + float(t[c]))
        out[b] = acc
    return out
