"""Distinct values and set difference of 1-D tensors: `tf.unique_with_counts` and
`tf.setdiff1d` (TensorFlow's UniqueWithCounts and ListDiff ops; `tf.unique` is in
array_ops; `tf.sparse_mask` builds on setdiff1d).  Both keep first-appearance order;
neither is differentiable, as in TensorFlow.  Kernels: flowlab.kernels.unique_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.array_ops import _INDEX, _to_tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["unique_with_counts", "setdiff1d"]


def _vector(op: Operation, i: int) -> TensorShape:
    s = op.inputs[i].shape
    if s.ndims is not None and s.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.ndims}")
    return s.with_rank(1) if s.ndims is not None else TensorShape([None])


def _unique_shape(op: Operation) -> list[Any]:
    return [TensorShape([None]), op.inputs[0].shape.with_rank(1) if op.inputs[0].shape.ndims == 1
            else TensorShape([None]), TensorShape([None])]


def _list_diff_shape(op: Operation) -> list[Any]:
    _vector(op, 0)
    _vector(op, 1)
    return [TensorShape([None]), TensorShape([None])]


op_def("UniqueWithCounts", inputs=["x: T"], outputs=["y: T", "idx: out_idx", "count: out_idx"],
       attrs=["T: type", f"out_idx: {_INDEX} = int32"], shape_fn=_unique_shape)
op_def("ListDiff", inputs=["x: T", "y: T"], outputs=["out: T", "idx: out_idx"],
       attrs=["T: type", f"out_idx: {_INDEX} = int32"], shape_fn=_list_diff_shape)
not_differentiable("UniqueWithCounts")
not_differentiable("ListDiff")


def unique_with_counts(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """`tf.unique`'s (y, idx) plus how often each value of `y` occurs in `x`.

    >>> tf.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8])   # y [1 2 4 7 8], count [2 1 3 1 2]
    """
    return apply_op("UniqueWithCounts", x=_to_tensor(x, "x"), out_idx=dtypes.as_dtype(out_idx),
                    name=name or "UniqueWithCounts")


def setdiff1d(x: Any, y: Any, index_dtype: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The values of `x` not in `y`, in order (repeats kept), and their positions in `x`.

    >>> tf.setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5])   # out [2 4 6], idx [1 3 5]
    """
    xt = _to_tensor(x, "x")
    return apply_op("ListDiff", x=xt, y=_to_tensor(y, "y", dtype=xt.dtype.base_dtype),
                    out_idx=dtypes.as_dtype(index_dtype), name=name or "ListDiff")
