"""Bounding boxes on images: DrawBoundingBoxes / DrawBoundingBoxesV2 and
`tf.image.draw_bounding_boxes` (with `colors`, the V2 op, as TensorFlow's builder
chooses); SampleDistortedBoundingBoxV2 and TF1's `tf.image.sample_distorted_bounding_box`
(a stateful random op: its seed and seed2 are passed as given, as TF1's builder does,
so seedless calls are nondeterministic); NonMaxSuppressionV3 and
`tf.image.non_max_suppression` (greedy: by score, ties to the lower index, dropping a
box whose IOU with a kept one exceeds the threshold).  None is differentiable, as in TensorFlow.
Kernels: flowlab.kernels.image_boxes_kernels, flowlab.kernels.image_sample_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["draw_bounding_boxes", "sample_distorted_bounding_box", "non_max_suppression"]


def _same(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {s.ndims}")
    if s.ndims is not None and s.as_list()[3] not in (None, 1, 3, 4):
        raise ValueError("Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)")
    return [s]


op_def("DrawBoundingBoxes", inputs=["images: T", "boxes: float32"], outputs=["output: T"],
       attrs=["T: {float32, float16} = float32"], shape_fn=_same,
       doc="Draw the boxes' edges on a batch of images in TensorFlow's colour cycle.")
op_def("DrawBoundingBoxesV2", inputs=["images: T", "boxes: float32", "colors: float32"], outputs=["output: T"],
       attrs=["T: {float32, float16} = float32"], shape_fn=_same,
       doc="Draw the boxes' edges on a batch of images, cycling through `colors`.")
not_differentiable("DrawBoundingBoxes")
not_differentiable("DrawBoundingBoxesV2")


def _sample_shapes(op: Operation) -> list[Any]:
    size, boxes = op.inputs[0], op.inputs[1]
    size.shape.with_rank(1)
    boxes.shape.with_rank(3)
    return [TensorShape([3]), TensorShape([3]), TensorShape([1, 1, 4])]


op_def("SampleDistortedBoundingBoxV2", inputs=["image_size: T", "bounding_boxes: float32",
                                               "min_object_covered: float32"],
       outputs=["begin: T", "size: T", "bboxes: float32"],
       attrs=["T: {uint8, int8, int16, int32, int64}", "seed: int = 0", "seed2: int = 0",
              "aspect_ratio_range: list(float) = [0.75, 1.33]", "area_range: list(float) = [0.05, 1.0]",
              "max_attempts: int = 100", "use_image_if_no_bounding_boxes: bool = false"],
       shape_fn=_sample_shapes, stateful=True,
       doc="A random crop of an image covering part of one of its bounding boxes.")
not_differentiable("SampleDistortedBoundingBoxV2")


def sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: int | None = None,
                                  seed2: int | None = None, min_object_covered: Any = 0.1,
                                  aspect_ratio_range: Any = None, area_range: Any = None,
                                  max_attempts: int | None = None, use_image_if_no_bounding_boxes: bool | None = None,
                                  name: str | None = None) -> list[Tensor]:
    """(begin, size, bboxes): a random crop for `tf.slice(image, begin, size)`.

        begin, size, box = tf.image.sample_distorted_bounding_box(
            tf.shape(image), bounding_boxes=boxes, min_object_covered=0.1, seed=1)
    """
    attrs: dict[str, Any] = {"seed": seed or 0, "seed2": seed2 or 0}
    for key, value in (("aspect_ratio_range", aspect_ratio_range), ("area_range", area_range),
                       ("max_attempts", max_attempts),
                       ("use_image_if_no_bounding_boxes", use_image_if_no_bounding_boxes)):
        if value is not None:
            attrs[key] = list(value) if isinstance(value, (list, tuple)) else value
    from flowlab.ops.nn_ops import _name_scope

    with _name_scope(name, "sample_distorted_bounding_box", [image_size, bounding_boxes]):
        return list(apply_op("SampleDistortedBoundingBoxV2", image_size=image_size, bounding_boxes=bounding_boxes,
                             min_object_covered=min_object_covered, name=name or "SampleDistortedBoundingBoxV2",
                             **attrs))


def draw_bounding_boxes(images: Any, boxes: Any, name: str | None = None, colors: Any = None) -> Tensor:
    """Draw `boxes` ([batch, n, 4]: y_min, x_min, y_max, x_max in [0, 1]) on float images."""
    if colors is None:
        return apply_op("DrawBoundingBoxes", images=images, boxes=boxes, name=name or "DrawBoundingBoxes")
    return apply_op("DrawBoundingBoxesV2", images=images, boxes=boxes, colors=colors,
                    name=name or "DrawBoundingBoxesV2")


def _nms_shape(op: Operation) -> list[Any]:
    op.inputs[0].shape.with_rank(2)
    op.inputs[1].shape.with_rank(1)
    return [TensorShape([None])]


op_def("NonMaxSuppressionV3", inputs=["boxes: T", "scores: T", "max_output_size: int32",
                                      "iou_threshold: T_threshold", "score_threshold: T_threshold"],
       outputs=["selected_indices: int32"],
       attrs=["T: {float16, float32} = float32", "T_threshold: {float16, float32} = float32"],
       shape_fn=_nms_shape, doc="Greedy non-maximum suppression of boxes by score.")
not_differentiable("NonMaxSuppressionV3")


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                        score_threshold: Any = float("-inf"), name: str | None = None) -> Tensor:
    """Indices (int32) of at most `max_output_size` boxes, highest scores first, none
    overlapping a better one by more than `iou_threshold` IOU."""
    from flowlab.ops.builder import convert_to_tensor
    from flowlab.ops.nn_ops import _name_scope

    with _name_scope(name, "non_max_suppression", [boxes, scores]):
        iou_threshold = convert_to_tensor(iou_threshold, name="iou_threshold")
        score_threshold = convert_to_tensor(score_threshold, name="score_threshold")
        return apply_op("NonMaxSuppressionV3", boxes=boxes, scores=scores, max_output_size=max_output_size,
                        iou_threshold=iou_threshold, score_threshold=score_threshold, name="NonMaxSuppressionV3")
