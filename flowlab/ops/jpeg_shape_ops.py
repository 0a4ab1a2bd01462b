"""`tf.image.extract_jpeg_shape` / `tf.io.extract_jpeg_shape`: [height, width, channels]
of a JPEG read from its frame header (the ExtractJpegShape op), without decoding.
Not differentiable.  Kernel: flowlab.kernels.jpeg_shape_kernels."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["extract_jpeg_shape"]

op_def("ExtractJpegShape", inputs=["contents: string"], outputs=["image_shape: output_type"],
       attrs=["output_type: {int32, int64} = int32"], shape_fn=lambda op: [TensorShape([3])])
not_differentiable("ExtractJpegShape")


def extract_jpeg_shape(contents: Any, output_type: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """[height, width, channels] of the JPEG image `contents` (a scalar string)."""
    return apply_op("ExtractJpegShape", contents=convert_to_tensor(contents, dtype=dtypes.string, name="contents"),
                    output_type=dtypes.as_dtype(output_type), name=name or "ExtractJpegShape")
