"""Kernel of SampleDistortedBoundingBoxV2: TensorFlow's random crop search, on its Philox stream.

State: the op's GuardedPhilox (seed, seed2 attrs; (0, 0) nondeterministic), kept in
the device's resource manager as every random op's; each run reserves
4 * max_attempts uint32 words and reads them one at a time (SimplePhilox).

Per attempt: an aspect ratio uniform in aspect_ratio_range; a height uniform between
the rounded heights of the smallest and largest allowed areas (ExactUniformInt:
rejection of the low words, TensorFlow's), the width round(height * ratio), nudged
by one row when rounding leaves the area range, and a uniform offset; the crop is
kept when it covers at least min_object_covered of one bounding box.  After
max_attempts failures the whole image is used.  Outputs: begin and size for Slice,
and the crop as a [1, 1, 4] box.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.philox import SingleSamples
from flowlab.kernels.random_kernels import _generator, uint32_to_float
from flowlab.kernels.registry import CPU, kernel

_F32 = np.float32


class _SimplePhilox:
    def __init__(self, gen: Any) -> None:
        self._next = SingleSamples(gen)

    def rand_float(self) -> np.float32:
        return _F32(uint32_to_float(np.array([self._next()], dtype=np.uint32))[0])

    def uniform(self, n: int) -> int:
        """TensorFlow's ExactUniformInt over uint32 words."""
        if n == 0:
            self._next()
            return 0
        if n & (n - 1) == 0:
            return self._next() & (n - 1)
        rem = (0xFFFFFFFF % n) + 1
        while True:
            rnd = self._next()
            if rnd >= rem:
                return rnd % n


def _lrintf(x: Any) -> int:
    return int(np.rint(_F32(x)))


def _random_crop(width: int, height: int, min_area_f: float, max_area_f: float, ratio: np.float32,
                 rng: _SimplePhilox) -> tuple[int, int, int, int] | None:
    if max_area_f <= 0.0 or ratio <= 0.0 or width <= 0 or height <= 0 or min_area_f > max_area_f:
        return None
    min_area = _F32(_F32(min_area_f) * _F32(width)) * _F32(height)
    max_area = _F32(_F32(max_area_f) * _F32(width)) * _F32(height)
    h = _lrintf(np.sqrt(_F32(min_area / ratio)))
    max_h = _lrintf(np.sqrt(_F32(max_area / ratio)))
    if _lrintf(_F32(max_h) * ratio) > width:
        max_h = int((width + 0.5 - float(_F32(1e-7))) / float(ratio))
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += rng.uniform(max_h - h + 1)
    w = _lrintf(_F32(h) * ratio)
    area = _F32(w * h)
    if area < min_area:
        h += 1
        w = _lrintf(_F32(h) * ratio)
        area = _F32(w * h)
    if area > max_area:
        h -= 1
        w = _lrintf(_F32(h) * ratio)
        area = _F32(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = rng.uniform(height - h) if h < height else 0
    x = rng.uniform(width - w) if w < width else 0
    return x, y, x + w, y + h


def _area(r: tuple[int, int, int, int]) -> int:
    return (r[2] - r[0]) * (r[3] - r[1])


def _covers(crop: tuple[int, int, int, int], min_covered: np.float32, boxes: list[Any]) -> bool:
    if _area(crop) < 1:
        return False
    for b in boxes:
        object_area = _F32(_area(b))
        if object_area < 1:
            continue
        ix0, iy0, ix1, iy1 = max(crop[0], b[0]), max(crop[1], b[1]), min(crop[2], b[2]), min(crop[3], b[3])
        inter = (ix1 - ix0) * (iy1 - iy0) if ix1 > ix0 and iy1 > iy0 else 0
        if _F32(_F32(inter) / object_area) >= min_covered:
            return True
    return False


@kernel("SampleDistortedBoundingBoxV2", devices=CPU)
def sample_distorted_bounding_box_v2(ctx: Any, image_size: Any, bounding_boxes: Any, min_object_covered: Any) -> Any:
    a = ctx.attrs
    size = np.asarray(image_size)
    if size.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"image_size must be 1-dimensional{list(size.shape)}")
    if size.shape[0] != 3:
        raise errors.InvalidArgumentError(None, None, f"image_size must contain 3 elements{list(size.shape)}")
    height, width = int(size[0]), int(size[1])
    boxes_in = np.asarray(bounding_boxes, dtype=np.float32)
    if boxes_in.ndim != 3:
        raise errors.InvalidArgumentError(
            None, None, f"input boxes must be 3-dimensional [batch, num_boxes, coords]: {list(boxes_in.shape)}")
    if boxes_in.shape[-1] != 4:
        raise errors.InvalidArgumentError(
            None, None, f"bounding boxes must have shape [4] or [*, 4], got {list(boxes_in.shape)}")
    covered = np.asarray(min_object_covered)
    if covered.ndim != 0:
        raise errors.InvalidArgumentError(None, None, f"min_object_covered must be 0-D, got shape {list(covered.shape)}")
    min_covered = _F32(covered)
    if not min_covered >= 0:
        raise errors.InvalidArgumentError(None, None, f"min_object_covered must be 0 or larger, got {min_covered}")
    boxes = []
    for y0, x0, y1, x1 in boxes_in.reshape(-1, 4):
        for v in (y0, x0, y1, x1):
            if not 0.0 <= v <= 1.0:
                raise errors.InvalidArgumentError(
                    None, None, f"All bounding box coordinates must be in [0.0, 1.0]: {v}")
        boxes.append((int(x0 * _F32(width)), int(y0 * _F32(height)), int(x1 * _F32(width)), int(y1 * _F32(height))))
    image_rect = (0, 0, width, height)
    if not boxes:
        if not a.get("use_image_if_no_bounding_boxes", False):
            raise errors.InvalidArgumentError(
                None, None, "No bounding boxes provided as input. One must enable use_image_if_no_bounding_boxes "
                "if you wish to not provide any bounding boxes.")
        boxes.append(image_rect)
    lo_area, hi_area = (float(v) for v in a.get("area_range", [0.05, 1.0]))
    lo_ratio, hi_ratio = (_F32(v) for v in a.get("aspect_ratio_range", [0.75, 1.33]))
    attempts = int(a.get("max_attempts", 100))
    rng = _SimplePhilox(_generator(ctx).reserve_samples32(4 * attempts))
    crop = None
    for _ in range(attempts):
        ratio = _F32(rng.rand_float() * _F32(hi_ratio - lo_ratio)) + lo_ratio
        c = _random_crop(width, height, lo_area, hi_area, _F32(ratio), rng)
        if c is not None and _covers(c, min_covered, boxes):
            crop = c
            break
    x0, y0, x1, y1 = crop if crop is not None else image_rect
    dt = size.dtype
    begin = np.array([y0, x0, 0], dtype=dt)
    extent = np.array([y1 - y0, x1 - x0, -1], dtype=dt)
    fh, fw = _F32(height), _F32(width)
    box = np.array([[[_F32(y0) / fh, _F32(x0) / fw, _F32(y1) / fh, _F32(x1) / fw]]], dtype=np.float32)
    return begin, extent, box
