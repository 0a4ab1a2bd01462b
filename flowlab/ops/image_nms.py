"""More non-maximum suppression: `tf.image.non_max_suppression_with_scores` (the
NonMaxSuppressionV5 op: the kept boxes' scores too, and Soft-NMS when
`soft_nms_sigma` > 0, each overlapping candidate's score scaled by
exp(-IOU^2 / (2 sigma)) and requeued) and `tf.image.non_max_suppression_overlaps`
(NonMaxSuppressionWithOverlaps: greedy selection under a given overlap matrix).
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

__all__ = ["non_max_suppression_with_scores", "non_max_suppression_overlaps"]


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
