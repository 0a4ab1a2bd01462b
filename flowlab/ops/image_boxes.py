"""Bounding boxes on images: DrawBoundingBoxes / DrawBoundingBoxesV2 and
`tf.image.draw_bounding_boxes` (with `colors`, the V2 op, as TensorFlow's builder
chooses).  Not differentiable, as in TensorFlow.  Kernels:
flowlab.kernels.image_boxes_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels import image_boxes_kernels  # noqa: F401  (registers the kernels)
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["draw_bounding_boxes"]


def _same(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {s.ndims}")
    return [s]


op_def("DrawBoundingBoxes", inputs=["images: T", "boxes: float32"], outputs=["output: T"],
       attrs=["T: {float32, float16} = float32"], shape_fn=_same,
       doc="Draw the boxes' edges on a batch of images in TensorFlow's colour cycle.")
op_def("DrawBoundingBoxesV2", inputs=["images: T", "boxes: float32", "colors: float32"], outputs=["output: T"],
       attrs=["T: {float32, float16} = float32"], shape_fn=_same,
       doc="Draw the boxes' edges on a batch of images, cycling through `colors`.")
not_differentiable("DrawBoundingBoxes")
not_differentiable("DrawBoundingBoxesV2")


def draw_bounding_boxes(images: Any, boxes: Any, name: str | None = None, colors: Any = None) -> Tensor:
    """Draw `boxes` ([batch, n, 4]: y_min, x_min, y_max, x_max in [0, 1]) on float images."""
    if colors is None:
        return apply_op("DrawBoundingBoxes", images=images, boxes=boxes, name=name or "DrawBoundingBoxes")
    return apply_op("DrawBoundingBoxesV2", images=images, boxes=boxes, colors=colors,
                    name=name or "DrawBoundingBoxesV2")
