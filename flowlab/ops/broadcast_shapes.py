"""The broadcast of two shapes: `tf.broadcast_dynamic_shape` (the BroadcastArgs op, on
shape tensors, evaluated at run time or folded when both are constants) and
`tf.broadcast_static_shape` (on TensorShapes, at build time)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.array_ops import _INDEX, _to_tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_evaluator, constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.math_defs import broadcast_dims
from flowlab.ops.op_def import op_def

__all__ = ["broadcast_dynamic_shape", "broadcast_static_shape"]


def _args_shape(op: Operation) -> list[Any]:
    a, b = op.inputs[0].shape, op.inputs[1].shape
    for s in (a, b):
        if s.ndims is not None and s.ndims != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {s.ndims}")
    n = [getattr(d, "value", d) for d in (a.dims[0] if a.ndims else None, b.dims[0] if b.ndims else None)]
    return [TensorShape([None if None in n else max(n)])]


op_def("BroadcastArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T"], attrs=[f"T: {_INDEX} = int32"],
       shape_fn=_args_shape)
not_differentiable("BroadcastArgs")


def broadcast_shape_values(a: list[int], b: list[int]) -> list[int]:
    """The broadcast of two concrete shapes, or ValueError with TensorFlow's message."""
    out = []
    for x, y in zip([1] * (len(b) - len(a)) + list(a), [1] * (len(a) - len(b)) + list(b)):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"Incompatible shapes: [{','.join(map(str, a))}] vs. [{','.join(map(str, b))}]")
        out.append(y if x == 1 else x)
    return out


@constant_evaluator("BroadcastArgs")
def _fold(op: Operation) -> Any:
    a, b = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    if a is None or b is None:
        return None
    try:
        return np.array(broadcast_shape_values(a.tolist(), b.tolist()), a.dtype)
    except ValueError:
        return None  # the kernel raises at run time, as TensorFlow does


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """The shape a broadcast of tensors of shapes `shape_x` and `shape_y` has (1-D ints).

    >>> tf.broadcast_dynamic_shape([1, 3], [2, 1])   # [2, 3]
    """
    x = _to_tensor(shape_x, "shape_x")
    return apply_op("BroadcastArgs", s0=x, s1=_to_tensor(shape_y, "shape_y", dtype=x.dtype.base_dtype),
                    name="BroadcastArgs")


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The broadcast of two TensorShapes (unknown where it cannot be known).

    Raises:
      ValueError: when the shapes are not broadcast-compatible.
    """
    x, y = TensorShape(shape_x), TensorShape(shape_y)
    if x.ndims is None or y.ndims is None:
        return TensorShape(None)
    out = broadcast_dims(x.as_tuple(), y.as_tuple(), strict=False)
    if out is None:
        raise ValueError("Incompatible shapes for broadcasting. Two shapes are compatible if for each "
                         "dimension pair they are either equal or one of them is 1. Received: "
                         f"{tuple(x.as_list())} and {tuple(y.as_list())}.")
    return TensorShape(list(out))
