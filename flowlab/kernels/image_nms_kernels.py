"""Kernels of NonMaxSuppressionV5 and NonMaxSuppressionWithOverlaps
(flowlab.ops.image_nms): TensorFlow's greedy loop (non_max_suppression_op.cc) over a
priority queue of (score, index), in the scores' float type."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.image_boxes_kernels import _iou
from flowlab.kernels.registry import CPU, kernel


def _greedy(n_scores: np.ndarray, similarity: Any, max_output: int, threshold: Any, score_threshold: Any,
            sigma: Any) -> tuple[list[int], list[Any]]:
    t = n_scores.dtype.type
    soft = float(sigma) > 0
    scale = t(-0.5 / float(sigma)) if soft else t(0)
    # Heap entries: (-score, index, suppress_begin_index); ties pop the lower index first.
    heap = [(-n_scores[i], i, 0) for i in range(n_scores.shape[0]) if n_scores[i] > score_threshold]
    heapq.heapify(heap)
    selected: list[int] = []
    selected_scores: list[Any] = []
    while len(selected) < max_output and heap:
        neg, i, begin = heapq.heappop(heap)
        score = original = t(-neg)
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = similarity(i, selected[j])
            weight = t(np.exp(scale * sim * sim)) if sim <= threshold else t(0)
            score = t(score * weight)
            if not soft and sim > threshold:
                hard = True
                break
            if score <= score_threshold:
                break
        begin = len(selected)
        if not hard:
            if score == original:
                selected.append(i)
                selected_scores.append(score)
                continue
            if score > score_threshold:
                heapq.heappush(heap, (-score, i, begin))
    return selected, selected_scores


def _bad(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


@kernel("NonMaxSuppressionV5", devices=CPU)
def nms_v5(ctx: Any, boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any, score_threshold: Any,
           soft_nms_sigma: Any) -> Any:
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise _bad(f"boxes must be 2-D[num_boxes, 4]: {list(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise _bad(f"scores has incompatible shape {list(scores.shape)} for boxes {list(boxes.shape)}")
    t = scores.dtype.type
    iou_t = t(np.asarray(iou_threshold))
    if not 0 <= iou_t <= 1:
        raise _bad("iou_threshold must be in [0, 1]")
    sigma = t(np.asarray(soft_nms_sigma))
    if sigma < 0:
        raise _bad("soft_nms_sigma must be non-negative")
    n = int(np.asarray(max_output_size))
    sel, sc = _greedy(scores, lambda i, j: t(_iou(boxes, i, j)), n, iou_t, t(np.asarray(score_threshold)), sigma)
    valid = len(sel)
    if ctx.attrs["pad_to_max_output_size"]:
        sel, sc = sel + [0] * (n - valid), sc + [t(0)] * (n - valid)
    return [np.array(sel, np.int32), np.array(sc, scores.dtype), np.int32(valid)]


@kernel("NonMaxSuppressionWithOverlaps", devices=CPU)
def nms_with_overlaps(ctx: Any, overlaps: Any, scores: Any, max_output_size: Any, overlap_threshold: Any,
                      score_threshold: Any) -> Any:
    ov, scores = np.asarray(overlaps, np.float32), np.asarray(scores, np.float32)
    if ov.ndim != 2 or ov.shape[0] != ov.shape[1]:
        raise _bad(f"overlaps must be 2-D, square: {list(ov.shape)}")
    if scores.ndim != 1 or scores.shape[0] != ov.shape[0]:
        raise _bad(f"scores has incompatible shape {list(scores.shape)} for overlaps {list(ov.shape)}")
    sel, _ = _greedy(scores, lambda i, j: ov[i, j], int(np.asarray(max_output_size)),
                     np.float32(overlap_threshold), np.float32(score_threshold), 0.0)
    return np.array(sel, np.int32)


@kernel("CombinedNonMaxSuppression", devices=CPU)
def combined_nms(ctx: Any, boxes: Any, scores: Any, max_output_size_per_class: Any, max_total_size: Any,
                 iou_threshold: Any, score_threshold: Any) -> Any:
    boxes, scores = np.asarray(boxes, np.float32), np.asarray(scores, np.float32)
    if boxes.ndim != 4 or boxes.shape[3] != 4:
        raise _bad(f"boxes must be 4-D[batch_size, num_boxes, q, 4]: {list(boxes.shape)}")
    if scores.ndim != 3:
        raise _bad(f"scores must be 3-D: {list(scores.shape)}")
    batch, num_boxes, q, _ = boxes.shape
    num_classes = scores.shape[2]
    if q != 1 and q != num_classes:
        raise _bad("third dimension of boxes must be either 1 or num classes")
    per_class, total = int(np.asarray(max_output_size_per_class)), int(np.asarray(max_total_size))
    if total <= 0:
        raise _bad(f"max_total_size must be > 0: {total}")
    iou_t, score_t = np.float32(iou_threshold), np.float32(score_threshold)
    if not 0 <= iou_t <= 1:
        raise _bad("iou_threshold must be in [0, 1]")
    n = min(total, per_class * num_classes) if ctx.attrs["pad_per_class"] else total
    out_boxes = np.zeros((batch, n, 4), np.float32)
    out_scores = np.zeros((batch, n), np.float32)
    out_classes = np.zeros((batch, n), np.float32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        found: list[tuple[Any, int, int]] = []
        for c in range(num_classes):
            cb = boxes[b, :, 0 if q == 1 else c, :]
            sel, sc = _greedy(scores[b, :, c], lambda i, j, cb=cb: np.float32(_iou(cb, i, j)), per_class, iou_t,
                              score_t, 0.0)
            found += [(s, i, c) for i, s in zip(sel, sc)]
        # TensorFlow sorts by score alone (std::sort, not stable): equal scores may come in any order.
        found.sort(key=lambda r: -r[0])
        found = found[:n]
        valid[b] = len(found)
        for k, (s, i, c) in enumerate(found):
            box = boxes[b, i, 0 if q == 1 else c, :]
            out_boxes[b, k] = np.clip(box, 0.0, 1.0) if ctx.attrs["clip_boxes"] else box
            out_scores[b, k], out_classes[b, k] = s, c
    return [out_boxes, out_scores, out_classes, valid]
