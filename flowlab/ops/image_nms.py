"""More non-maximum suppression: `tf.image.non_max_suppression_with_scores` (the
NonMaxSuppressionV5 op: the kept boxes' scores too, and Soft-NMS when
`soft_nms_sigma` > 0, each overlapping candidate's score scaled by
exp(-IOU^2 / (2 sigma)) and requeued) and `tf.image.non_max_suppression_overlaps`
(NonMaxSuppressionWithOverlaps: greedy selection under a given overlap matrix) and
`tf.image.combined_non_max_suppression` (CombinedNonMaxSuppression: per image and class,
then the best of all classes, boxes clipped to [0, 1], outputs zero-padded).
The greedy queue is TensorFlow's: highest score first, ties by lower index, each
candidate compared with the selected boxes newest first.  Not differentiable.
Kernels: flowlab.kernels.image_nms_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["non_max_suppression_with_scores", "non_max_suppression_overlaps", "combined_non_max_suppression"]


def _v5_shape(op: Operation) -> list[Any]:
    op.inputs[0].shape.with_rank(2)
    op.inputs[1].shape.with_rank(1)
    return [TensorShape([None]), TensorShape([None]), TensorShape([])]


op_def("NonMaxSuppressionV5", inputs=["boxes: T", "scores: T", "max_output_size: int32", "iou_threshold: T",
                                      "score_threshold: T", "soft_nms_sigma: T"],
       outputs=["selected_indices: int32", "selected_scores: T", "valid_outputs: int32"],
       attrs=["T: {float16, float32} = float32", "pad_to_max_output_size: bool = false"], shape_fn=_v5_shape)
op_def("NonMaxSuppressionWithOverlaps", inputs=["overlaps: float32", "scores: float32", "max_output_size: int32",
                                                "overlap_threshold: float32", "score_threshold: float32"],
       outputs=["selected_indices: int32"],
       shape_fn=lambda op: [TensorShape([None])])
not_differentiable("NonMaxSuppressionV5")
not_differentiable("NonMaxSuppressionWithOverlaps")


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                                    score_threshold: Any = float("-inf"), soft_nms_sigma: Any = 0.0,
                                    name: str | None = None) -> tuple[Tensor, Tensor]:
    """(selected_indices, selected_scores) of greedy NMS, Soft-NMS with sigma > 0."""
    from flowlab.graph.graph import get_default_graph

    with get_default_graph().name_scope(name or "non_max_suppression_with_scores"):
        boxes = convert_to_tensor(boxes, name="boxes")
        t = boxes.dtype.base_dtype
        out = apply_op("NonMaxSuppressionV5", boxes=boxes, scores=convert_to_tensor(scores, dtype=t, name="scores"),
                       max_output_size=convert_to_tensor(max_output_size, dtype=dtypes.int32),
                       iou_threshold=convert_to_tensor(iou_threshold, dtype=t, name="iou_threshold"),
                       score_threshold=convert_to_tensor(score_threshold, dtype=t, name="score_threshold"),
                       soft_nms_sigma=convert_to_tensor(soft_nms_sigma, dtype=t, name="soft_nms_sigma"),
                       pad_to_max_output_size=False, name="NonMaxSuppressionV5")
        return out[0], out[1]


def non_max_suppression_overlaps(overlaps: Any, scores: Any, max_output_size: Any, overlap_threshold: Any = 0.5,
                                 score_threshold: Any = float("-inf"), name: str | None = None) -> Tensor:
    """Indices of greedy NMS where overlaps[i, j] says how much boxes i and j overlap."""
    from flowlab.graph.graph import get_default_graph

    with get_default_graph().name_scope(name or "non_max_suppression_overlaps"):
        f = dtypes.float32
        return apply_op("NonMaxSuppressionWithOverlaps", overlaps=convert_to_tensor(overlaps, dtype=f, name="overlaps"),
                        scores=convert_to_tensor(scores, dtype=f, name="scores"),
                        max_output_size=convert_to_tensor(max_output_size, dtype=dtypes.int32),
                        overlap_threshold=convert_to_tensor(overlap_threshold, dtype=f, name="overlap_threshold"),
                        score_threshold=convert_to_tensor(score_threshold, dtype=f, name="score_threshold"),
                        name="NonMaxSuppressionWithOverlaps")


def _combined_shape(op: Operation) -> list[Any]:
    b = op.inputs[0].shape.with_rank(4)
    op.inputs[1].shape.with_rank(3)
    from flowlab.ops.const_fold import constant_value

    total = constant_value(op.inputs[3])
    per_class = constant_value(op.inputs[2])
    classes = op.inputs[1].shape.as_list()[2] if op.inputs[1].shape.ndims else None
    n = None if total is None else int(total)
    if op.get_attr("pad_per_class") and n is not None and per_class is not None and classes is not None:
        n = min(n, int(per_class) * classes)
    batch = b.as_list()[0] if b.ndims else None
    return [TensorShape([batch, n, 4]), TensorShape([batch, n]), TensorShape([batch, n]), TensorShape([batch])]


op_def("CombinedNonMaxSuppression", inputs=["boxes: float32", "scores: float32", "max_output_size_per_class: int32",
                                            "max_total_size: int32", "iou_threshold: float32",
                                            "score_threshold: float32"],
       outputs=["nmsed_boxes: float32", "nmsed_scores: float32", "nmsed_classes: float32", "valid_detections: int32"],
       attrs=["pad_per_class: bool = false", "clip_boxes: bool = true"], shape_fn=_combined_shape)
not_differentiable("CombinedNonMaxSuppression")


def combined_non_max_suppression(boxes: Any, scores: Any, max_output_size_per_class: Any, max_total_size: Any,
                                 iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                                 pad_per_class: bool = False, clip_boxes: bool = True,
                                 name: str | None = None) -> list[Tensor]:
    """Per-class greedy NMS over a batch, then the best `max_total_size` of all classes:
    (boxes [batch, n, 4], scores, classes (float), valid_detections)."""
    from flowlab.graph.graph import get_default_graph

    with get_default_graph().name_scope(name or "combined_non_max_suppression"):
        f, i = dtypes.float32, dtypes.int32
        return apply_op("CombinedNonMaxSuppression", boxes=convert_to_tensor(boxes, dtype=f),
                        scores=convert_to_tensor(scores, dtype=f),
                        max_output_size_per_class=convert_to_tensor(max_output_size_per_class, dtype=i),
                        max_total_size=convert_to_tensor(max_total_size, dtype=i),
                        iou_threshold=convert_to_tensor(iou_threshold, dtype=f, name="iou_threshold"),
                        score_threshold=convert_to_tensor(score_threshold, dtype=f, name="score_threshold"),
                        pad_per_class=pad_per_class, clip_boxes=clip_boxes, name="CombinedNonMaxSuppression")
