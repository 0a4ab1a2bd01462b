"""tf.image.non_max_suppression_with_scores (hard and Soft-NMS) and
tf.image.non_max_suppression_overlaps: selections, scores and errors, differential
against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(18)


def _boxes(n: int) -> np.ndarray:
    c = RS.rand(n, 2).astype(np.float32)
    s = RS.rand(n, 2).astype(np.float32) * 0.5 + 0.1
    return np.concatenate([c, c + s], axis=1)


@pytest.mark.parametrize("sigma", [0.0, 0.5, 0.1])
@pytest.mark.parametrize("score_threshold", [float("-inf"), 0.3])
def test_with_scores(tf1: Any, sigma: float, score_threshold: float) -> None:
    boxes, scores = _boxes(30), RS.rand(30).astype(np.float32)

    def build(tf: Any) -> Any:
        i, s = tf.image.non_max_suppression_with_scores(boxes, scores, 12, iou_threshold=0.4,
                                                        score_threshold=score_threshold, soft_nms_sigma=sigma)
        return [i, s]

    assert_same(tf1, build, rtol=1e-6, atol=1e-7)


def test_overlaps(tf1: Any) -> None:
    ov = RS.rand(15, 15).astype(np.float32)
    ov = (ov + ov.T) / 2
    scores = RS.rand(15).astype(np.float32)

    def build(tf: Any) -> Any:
        return [tf.image.non_max_suppression_overlaps(ov, scores, 10, overlap_threshold=0.5),
                tf.image.non_max_suppression_overlaps(ov, scores, 3, overlap_threshold=0.9, score_threshold=0.2)]

    assert_same(tf1, build)


def test_errors(tf1: Any) -> None:
    assert_same_error(tf1, lambda tf: tf.image.non_max_suppression_with_scores(
        _boxes(3), tf.placeholder_with_default(np.ones(3, np.float32), [None]), 2, iou_threshold=1.5))


@pytest.mark.parametrize("q,pad,clip", [(1, False, True), (3, True, False), (3, False, True)])
def test_combined(tf1: Any, q: int, pad: bool, clip: bool) -> None:
    boxes = np.stack([np.stack([_boxes(20) * 1.2 - 0.1 for _ in range(q)], axis=1) for _ in range(2)])
    scores = RS.rand(2, 20, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        return tf.image.combined_non_max_suppression(boxes, scores, 4, 7, iou_threshold=0.45, score_threshold=0.2,
                                                     pad_per_class=pad, clip_boxes=clip)

    assert_same(tf1, lambda tf: list(build(tf)))
