"""Moving spatial blocks into channels and back: `tf.space_to_depth`,
`tf.depth_to_space` (also tf.nn), and TensorFlow 1.x's square-block
`tf.space_to_batch` / `tf.batch_to_space` (also tf.nn.space_to_batch).

SpaceToDepth turns each block_size x block_size patch of an NHWC image into
block_size^2 * C channels (row-major over the patch, channels innermost); DepthToSpace
is its inverse, and each op's gradient is the other one (TensorFlow's array_grad).  The
data format is NHWC (TensorFlow's CPU kernels have no other).  space_to_batch and
batch_to_space are SpaceToBatchND / BatchToSpaceND with block_shape [b, b] (int64), as
TensorFlow builds them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.array_ops import _dims
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def
from flowlab.ops.space_to_batch_ops import batch_to_space_nd, space_to_batch_nd

__all__ = ["space_to_depth", "depth_to_space", "space_to_batch", "batch_to_space"]


def _divide(size: int | None, by: int) -> int | None:
    if size is None:
        return None
    if size % by:
        raise ValueError(f"Dimension size must be evenly divisible by {by} but is {size}")
    return size // by


def _rank4(op: Operation) -> list[int | None]:
    d = _dims(op.inputs[0])
    if d is None:
        return [None] * 4
    if len(d) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(d)}")
    return d


def _space_to_depth_shape(op: Operation) -> list[Any]:
    n, h, w, c = _rank4(op)
    b = op.get_attr("block_size")
    oh, ow = _divide(h, b), _divide(w, b)
    return [TensorShape([n, oh, ow, None if c is None else c * b * b])]


def _depth_to_space_shape(op: Operation) -> list[Any]:
    n, h, w, c = _rank4(op)
    b = op.get_attr("block_size")
    oc = _divide(c, b * b)
    return [TensorShape([n, None if h is None else h * b, None if w is None else w * b, oc])]


_ATTRS = ["T: type", "block_size: int >= 2", "data_format: string = 'NHWC'"]
op_def("SpaceToDepth", inputs=["input: T"], outputs=["output: T"], attrs=_ATTRS, shape_fn=_space_to_depth_shape)
op_def("DepthToSpace", inputs=["input: T"], outputs=["output: T"], attrs=_ATTRS, shape_fn=_depth_to_space_shape)


def _block(op_type: str, block_size: Any) -> int:
    b = int(block_size)
    if b < 2:
        raise ValueError(f"Attr 'block_size' of '{op_type}' Op passed {b} less than minimum 2.")
    return b


def space_to_depth(input: Any, block_size: int, name: str | None = None,  # noqa: A002
                   data_format: str = "NHWC") -> Tensor:
    """[n, h, w, c] -> [n, h/b, w/b, c*b*b]: each b x b block becomes channels.

    >>> tf.space_to_depth(tf.reshape(tf.range(4), [1, 2, 2, 1]), 2)   # [[[[0, 1, 2, 3]]]]
    """
    return apply_op("SpaceToDepth", input=convert_to_tensor(input, name="input"),
                    block_size=_block("SpaceToDepth", block_size), data_format=data_format,
                    name=name or "SpaceToDepth")


def depth_to_space(input: Any, block_size: int, name: str | None = None,  # noqa: A002
                   data_format: str = "NHWC") -> Tensor:
    """[n, h, w, c*b*b] -> [n, h*b, w*b, c], the inverse of space_to_depth."""
    return apply_op("DepthToSpace", input=convert_to_tensor(input, name="input"),
                    block_size=_block("DepthToSpace", block_size), data_format=data_format,
                    name=name or "DepthToSpace")


def space_to_batch(input: Any, paddings: Any, block_size: int | None = None, name: str | None = None,  # noqa: A002
                   block_shape: int | None = None) -> Tensor:
    """SpaceToBatchND with square blocks of `block_size`, over a 4-D input."""
    b = block_shape if block_size is None else block_size
    result = space_to_batch_nd(input, np.array([b, b], dtype=np.int64), paddings, name=name)
    result.set_shape(result.shape.with_rank(4))
    return result


def batch_to_space(input: Any, crops: Any, block_size: int | None = None, name: str | None = None,  # noqa: A002
                   block_shape: int | None = None) -> Tensor:
    """BatchToSpaceND with square blocks of `block_size`, over a 4-D input."""
    b = block_shape if block_size is None else block_size
    result = batch_to_space_nd(input, np.array([b, b], dtype=np.int64), crops, name=name)
    result.set_shape(result.shape.with_rank(4))
    return result


@gradient("SpaceToDepth")
def _space_to_depth_grad(op: Operation, grad: Tensor) -> Any:
    return [depth_to_space(grad, op.get_attr("block_size"), data_format=op.get_attr("data_format"))]


@gradient("DepthToSpace")
def _depth_to_space_grad(op: Operation, grad: Tensor) -> Any:
    return [space_to_depth(grad, op.get_attr("block_size"), data_format=op.get_attr("data_format"))]
