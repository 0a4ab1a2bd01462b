"""Set operations over the last dimension (`tf.sets`), dense inputs.

`set_intersection(a, b)`, `set_difference(a, b)`, `set_union(a, b)` take [..., n]
tensors whose last dimension holds a set per leading index and return the result as
a SparseTensor (DenseToDenseSetOperation); `set_size` counts each set of a
SparseTensor (SetSize, int32).  None is differentiable, as in TensorFlow.  flowlab
has the dense-dense form only: SparseTensor operands (TensorFlow's
DenseToSparseSetOperation / SparseToSparseSetOperation) are refused with a
NotImplementedError.  Kernels: flowlab.kernels.set_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.sparse_tensor import SparseTensor

__all__ = ["set_intersection", "set_difference", "set_union", "set_size"]

_SET_TYPES = "{int8, int16, int32, int64, uint8, uint16, string}"


def _set_op_shape(op: Operation) -> list[Any]:
    r = op.inputs[0].shape.ndims
    rank = r if r is not None else None
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _set_size_shape(op: Operation) -> list[Any]:
    return [TensorShape(None)]


op_def("DenseToDenseSetOperation", inputs=["set1: T", "set2: T"],
       outputs=["result_indices: int64", "result_values: T", "result_shape: int64"],
       attrs=["set_operation: string", "validate_indices: bool = true", f"T: {_SET_TYPES}"],
       shape_fn=_set_op_shape, doc="A set operation along the last dimension of two dense tensors.")
op_def("SetSize", inputs=["set_indices: int64", "set_values: T", "set_shape: int64"], outputs=["size: int32"],
       attrs=["validate_indices: bool = true", f"T: {_SET_TYPES}"], shape_fn=_set_size_shape,
       doc="The number of distinct values in each set of a sparse tensor.")
not_differentiable("DenseToDenseSetOperation")
not_differentiable("SetSize")


def _operands(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, SparseTensor) or isinstance(b, SparseTensor):
        raise NotImplementedError("flowlab's set operations take dense tensors only")
    a = convert_to_tensor(a, name="a")
    b = convert_to_tensor(b, name="b")
    if b.dtype.base_dtype != a.dtype.base_dtype:
        raise TypeError(f"Types don't match, {a.dtype} vs {b.dtype}.")
    return a, b


def _set_operation(a: Any, b: Any, operation: str, validate_indices: bool) -> SparseTensor:
    indices, values, shape = apply_op("DenseToDenseSetOperation", set1=a, set2=b, set_operation=operation,
                                      validate_indices=validate_indices, name="DenseToDenseSetOperation")
    return SparseTensor(indices, values, shape)


def set_intersection(a: Any, b: Any, validate_indices: bool = True) -> SparseTensor:
    """The values in both `a` and `b`, per set of the last dimension."""
    a, b = _operands(a, b)
    return _set_operation(a, b, "intersection", validate_indices)


def set_difference(a: Any, b: Any, aminusb: bool = True, validate_indices: bool = True) -> SparseTensor:
    """The values of `a` not in `b` (or of `b` not in `a` when aminusb is False)."""
    a, b = _operands(a, b)
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices)


def set_union(a: Any, b: Any, validate_indices: bool = True) -> SparseTensor:
    """The values in `a` or `b`, per set of the last dimension."""
    a, b = _operands(a, b)
    return _set_operation(a, b, "union", validate_indices)


def set_size(a: Any, validate_indices: bool = True) -> Any:
    """The number of values in each set of the SparseTensor `a` (int32)."""
    if not isinstance(a, SparseTensor):
        raise TypeError(f"Expected `SparseTensor`, got {a}.")
    if a.values.dtype.base_dtype == dtypes.bool:
        raise TypeError(f"Invalid dtype `{a.values.dtype}`.")
    return apply_op("SetSize", set_indices=a.indices, set_values=a.values, set_shape=a.dense_shape,
                    validate_indices=validate_indices, name="SetSize")
