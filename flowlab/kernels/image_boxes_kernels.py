"""Kernels of DrawBoundingBoxes and DrawBoundingBoxesV2 (TensorFlow's CPU kernel).

Box corners (y_min, x_min, y_max, x_max) in [0, 1] scale by (height - 1) and
(width - 1) in float32 and truncate toward zero; the four one-pixel edges are drawn in
the box's colour (cycling through the table: TensorFlow's ten RGBA colours, or the
`colors` input), clipped to the image; an inverted or wholly outside box is skipped.
A gray image draws every box white.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_TABLE = [[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1],
          [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]]


def _draw(images: Any, boxes: Any, colors: Any = None) -> Any:
    images, boxes = np.asarray(images), np.asarray(boxes)
    if images.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"The rank of the images should be 4{list(images.shape)}")
    b, h, w, depth = images.shape
    if depth not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None, None, "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)")
    if boxes.ndim != 3 or boxes.shape[0] != b or boxes.shape[2] != 4:
        raise errors.InvalidArgumentError(None, None, f"boxes must be 3-D [batch, num_boxes, 4]: {list(boxes.shape)}")
    table = [list(map(float, row)) for row in np.asarray(colors)] if colors is not None and np.size(colors) else \
        [list(row) for row in _TABLE]
    if colors is not None and np.size(colors) and np.asarray(colors).shape[1] < depth:
        raise errors.InvalidArgumentError(None, None, "Channel depth is greater than the number of colors")
    if depth == 1:
        for row in table:
            row[0] = 1
    canvas = images.copy()
    for i in range(b):
        for k in range(boxes.shape[1]):
            color = np.asarray(table[k % len(table)][:depth], dtype=images.dtype)
            y0, x0, y1, x1 = (int(np.float32(v) * np.float32(n - 1))
                              for v, n in zip(boxes[i, k].astype(np.float32), (h, w, h, w)))
            if y0 > y1 or x0 > x1 or y0 >= h or y1 < 0 or x0 >= w or x1 < 0:
                continue
            ya, yb, xa, xb = max(y0, 0), min(y1, h - 1), max(x0, 0), min(x1, w - 1)
            if y0 >= 0:
                canvas[i, y0, xa:xb + 1] = color
            if y1 < h:
                canvas[i, y1, xa:xb + 1] = color
            if x0 >= 0:
                canvas[i, ya:yb + 1, x0] = color
            if x1 < w:
                canvas[i, ya:yb + 1, x1] = color
    return canvas


@kernel("DrawBoundingBoxes", devices=CPU)
def draw_bounding_boxes(ctx: Any, images: Any, boxes: Any) -> Any:
    return _draw(images, boxes)


@kernel("DrawBoundingBoxesV2", devices=CPU)
def draw_bounding_boxes_v2(ctx: Any, images: Any, boxes: Any, colors: Any) -> Any:
    return _draw(images, boxes, colors)


def _iou(boxes: np.ndarray, i: int, j: int) -> Any:
    """TensorFlow's IOU of boxes i and j (corners in either order), in the boxes' dtype."""
    bi, bj = boxes[i], boxes[j]
    ymin_i, xmin_i = min(bi[0], bi[2]), min(bi[1], bi[3])
    ymax_i, xmax_i = max(bi[0], bi[2]), max(bi[1], bi[3])
    ymin_j, xmin_j = min(bj[0], bj[2]), min(bj[1], bj[3])
    ymax_j, xmax_j = max(bj[0], bj[2]), max(bj[1], bj[3])
    area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i)
    area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j)
    zero = boxes.dtype.type(0)
    if area_i <= zero or area_j <= zero:
        return zero
    inter = (max(min(ymax_i, ymax_j) - max(ymin_i, ymin_j), zero)
             * max(min(xmax_i, xmax_j) - max(xmin_i, xmin_j), zero))
    return inter / (area_i + area_j - inter)


@kernel("NonMaxSuppressionV3", devices=CPU)
def non_max_suppression_v3(ctx: Any, boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any,
                           score_threshold: Any) -> Any:
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise errors.InvalidArgumentError(None, None, f"boxes must be 2-D[num_boxes, 4]: {list(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, f"scores has incompatible shape {list(scores.shape)} for boxes {list(boxes.shape)}")
    if np.ndim(max_output_size) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"max_output_size must be 0-D, got shape {list(np.shape(max_output_size))}")
    iou_t = np.asarray(iou_threshold).astype(np.float32)
    if not 0 <= iou_t <= 1:
        raise errors.InvalidArgumentError(None, None, "iou_threshold must be in [0, 1]")
    score_t = np.asarray(score_threshold).astype(np.float32)
    # Candidates by score, higher first; equal scores by lower index (TensorFlow's queue).
    order = [i for i in sorted(range(scores.shape[0]), key=lambda i: (-float(scores[i]), i))
             if np.float32(scores[i]) > score_t]
    selected: list[int] = []
    for i in order:
        if len(selected) >= int(max_output_size):
            break
        if all(not np.float32(_iou(boxes, i, j)) > iou_t for j in reversed(selected)):
            selected.append(i)
    return np.array(selected, dtype=np.int32)
