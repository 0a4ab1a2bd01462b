"""Arithmetic on SparseTensors, TensorFlow's ops and builders: `sparse_tensor_dense_matmul`
(SparseTensorDenseMatMul), `sparse_reduce_sum` / `sparse_reduce_max` and their
`_sparse` forms, `sparse_add` (SparseAdd with its magnitude threshold, or
SparseTensorDenseAdd with a dense operand), `sparse_softmax`, `sparse_maximum` /
`sparse_minimum`, and the sparse-dense cwise ops behind `sp * dense` and `sp / dense`.

Every op takes the sparse operand as its three tensors (indices, values, dense_shape),
as TensorFlow's do.  What the kernels (flowlab.kernels.sparse_math_kernels) inherit
from TensorFlow and keep: SparseAdd and SparseSparseMaximum merge two index lists
in one pass that assumes both are ordered (out-of-order input gives TensorFlow's
odd output, not an error); SparseSoftmax and the reductions sort a copy first;
SparseSoftmax gives its values in sorted order.  Gradients: flowlab.ops.sparse_grad.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.const_fold import constant_value
from flowlab.ops.op_def import op_def
from flowlab.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = [
    "sparse_tensor_dense_matmul", "sparse_reduce_sum", "sparse_reduce_sum_sparse",
    "sparse_reduce_max", "sparse_reduce_max_sparse", "sparse_add", "sparse_softmax",
    "sparse_maximum", "sparse_minimum",
]

_NUM = ("{float32, float64, int32, uint8, int16, int8, complex64, int64, uint16, complex128, "
        "float16, uint32, uint64}")
_REAL = "{float32, float64, int32, uint8, int16, int8, int64, uint16, float16, uint32, uint64}"


def convert_to_sparse_tensor(sp_input: Any) -> SparseTensor:
    """A SparseTensor from a SparseTensor or SparseTensorValue (TensorFlow's check)."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


# --- shape functions ------------------------------------------------------------------
def _rank(op: Operation, i: int) -> int | None:
    """The sparse operand's rank: indices' second dim, else dense_shape's length."""
    r = op.inputs[i].shape[1].value if op.inputs[i].shape.ndims == 2 else None
    if r is None and op.inputs[i + 2].shape.ndims == 1:
        r = op.inputs[i + 2].shape[0].value
    return r


def _matmul_shape(op: Operation) -> list[Any]:
    a_shape = constant_value(op.inputs[2])
    b = op.inputs[3].shape
    if b.ndims is not None and b.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {b.ndims}")
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    rows = None if a_shape is None else int(a_shape[1 if adj_a else 0])
    inner = None if a_shape is None else int(a_shape[0 if adj_a else 1])
    b_inner = b[1 if adj_b else 0].value if b.ndims else None
    if inner is not None and b_inner is not None and inner != b_inner:
        raise ValueError(f"Dimensions must be equal, but are {inner} and {b_inner}")
    return [TensorShape([rows, b[0 if adj_b else 1].value if b.ndims else None])]


def _reduce_shape(op: Operation) -> list[Any]:
    shape, axes = constant_value(op.inputs[2]), constant_value(op.inputs[3])
    if shape is None or axes is None:
        return [TensorShape(None)]
    rank = len(shape)
    drop = {int(a) % rank for a in np.asarray(axes).reshape(-1) if -rank <= a < rank}
    keep = op.get_attr("keep_dims")
    return [TensorShape([1 if d in drop else int(s) for d, s in enumerate(shape)
                         if keep or d not in drop])]


def _reduce_sparse_shape(op: Operation) -> list[Any]:
    return [TensorShape(None), TensorShape(None), TensorShape(None)]  # TensorFlow infers nothing


def _values_shape(op: Operation) -> list[Any]:
    return [TensorShape([op.inputs[0].shape[0].value if op.inputs[0].shape.ndims else None])]


def _sparse_sum_shape(op: Operation) -> list[Any]:
    r = _rank(op, 0)
    return [TensorShape([None, r]), TensorShape([None]), op.inputs[2].shape]


def _sparse_minmax_shape(op: Operation) -> list[Any]:
    return [TensorShape([None, None]), TensorShape([None])]  # TensorFlow's: rank not inferred


op_def("SparseTensorDenseMatMul",
       inputs=["a_indices: Tindices", "a_values: T", "a_shape: int64", "b: T"],
       outputs=["product: T"],
       attrs=["T: type", "Tindices: {int32, int64} = int64", "adjoint_a: bool = false",
              "adjoint_b: bool = false"], shape_fn=_matmul_shape)
for _t, _types in (("Sum", _NUM), ("Max", _REAL)):
    op_def(f"SparseReduce{_t}",
           inputs=["input_indices: int64", "input_values: T", "input_shape: int64",
                   "reduction_axes: int32"], outputs=["output: T"],
           attrs=["keep_dims: bool = false", f"T: {_types}"], shape_fn=_reduce_shape)
    op_def(f"SparseReduce{_t}Sparse",
           inputs=["input_indices: int64", "input_values: T", "input_shape: int64",
                   "reduction_axes: int32"],
           outputs=["output_indices: int64", "output_values: T", "output_shape: int64"],
           attrs=["keep_dims: bool = false", f"T: {_types}"], shape_fn=_reduce_sparse_shape)
op_def("SparseAdd",
       inputs=["a_indices: int64", "a_values: T", "a_shape: int64", "b_indices: int64",
               "b_values: T", "b_shape: int64", "thresh: Treal"],
       outputs=["sum_indices: int64", "sum_values: T", "sum_shape: int64"],
       attrs=[f"T: {_NUM}", f"Treal: {_REAL}"], shape_fn=_sparse_sum_shape)
op_def("SparseAddGrad",
       inputs=["backprop_val_grad: T", "a_indices: int64", "b_indices: int64", "sum_indices: int64"],
       outputs=["a_val_grad: T", "b_val_grad: T"], attrs=[f"T: {_NUM}"],
       shape_fn=lambda op: [TensorShape([op.inputs[1].shape[0].value if op.inputs[1].shape.ndims else None]),
                            TensorShape([op.inputs[2].shape[0].value if op.inputs[2].shape.ndims else None])])
op_def("SparseTensorDenseAdd",
       inputs=["a_indices: Tindices", "a_values: T", "a_shape: Tindices", "b: T"],
       outputs=["output: T"], attrs=[f"T: {_NUM}", "Tindices: {int32, int64}"],
       shape_fn=lambda op: [op.inputs[3].shape])
op_def("SparseSoftmax", inputs=["sp_indices: int64", "sp_values: T", "sp_shape: int64"],
       outputs=["output: T"], attrs=["T: {float16, float32, float64}"],
       shape_fn=lambda op: [op.inputs[1].shape])
for _t, _types in (("Maximum", _REAL), ("Minimum", _NUM)):
    op_def(f"SparseSparse{_t}",
           inputs=["a_indices: int64", "a_values: T", "a_shape: int64", "b_indices: int64",
                   "b_values: T", "b_shape: int64"],
           outputs=["output_indices: int64", "output_values: T"], attrs=[f"T: {_types}"],
           shape_fn=_sparse_minmax_shape)
for _t in ("Mul", "Div", "Add"):
    op_def(f"SparseDenseCwise{_t}",
           inputs=["sp_indices: int64", "sp_values: T", "sp_shape: int64", "dense: T"],
           outputs=["output: T"], attrs=[f"T: {_NUM}"], shape_fn=_values_shape)


# --- builders -------------------------------------------------------------------------
def sparse_tensor_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: str | None = None) -> Any:
    """`sp_a @ b` with a SparseTensor `sp_a` (`tf.sparse.sparse_dense_matmul`); with a
    sparse `b` and dense `sp_a`, TensorFlow's transposed product.

        >>> sparse_tensor_dense_matmul(sp, tf.ones([3, 2]), adjoint_a=True)
    """
    if isinstance(b, (SparseTensor, SparseTensorValue)):
        if adjoint_a != adjoint_b:
            return array_ops.transpose(sparse_tensor_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return array_ops.transpose(sparse_tensor_dense_matmul(
            b, sp_a, adjoint_a=not adjoint_a, adjoint_b=not adjoint_b))
    sp_a = convert_to_sparse_tensor(sp_a)
    g = sp_a.graph
    with g.as_default(), g.name_scope(name or "SparseTensorDenseMatMul"):
        b = convert_to_tensor(b, name="b")
        return apply_op("SparseTensorDenseMatMul", name="SparseTensorDenseMatMul",
                        a_indices=sp_a.indices, a_values=sp_a.values, a_shape=sp_a.dense_shape,
                        b=b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)


def _reduction_axes(sp: SparseTensor, axis: Any) -> Any:
    """TensorFlow's `_ReductionDims`: every axis when `axis` is None."""
    if axis is not None:
        return axis
    n = sp.dense_shape.shape[0].value if sp.dense_shape.shape.ndims == 1 else None
    if n is not None:
        return np.arange(n, dtype=np.int32)
    return math_ops.range(0, array_ops.size(sp.dense_shape))


def _reduce(kind: str, sparse_out: bool, sp_input: Any, axis: Any, keepdims: Any, reduction_axes: Any,
            keep_dims: Any, name: str | None = None) -> Any:
    sp = convert_to_sparse_tensor(sp_input)
    axis = axis if axis is not None else reduction_axes
    keep = bool(keepdims if keepdims is not None else (keep_dims or False))
    op_type = f"SparseReduce{kind}" + ("Sparse" if sparse_out else "")
    out = apply_op(op_type, name=name or op_type, input_indices=sp.indices,
                   input_values=sp.values, input_shape=sp.dense_shape,
                   reduction_axes=_reduction_axes(sp, axis), keep_dims=keep)
    return SparseTensor(*out) if sparse_out else out


def sparse_reduce_sum(sp_input: Any, axis: Any = None, keepdims: Any = None,
                      reduction_axes: Any = None, keep_dims: Any = None) -> Tensor:
    """The sum of a SparseTensor's values over `axis` (all axes when None), a dense
    tensor (`tf.sparse.reduce_sum`; SparseReduceSum)."""
    return _reduce("Sum", False, sp_input, axis, keepdims, reduction_axes, keep_dims)  # type: ignore[no-any-return]


def sparse_reduce_sum_sparse(sp_input: Any, axis: Any = None, keepdims: Any = None,
                             reduction_axes: Any = None, keep_dims: Any = None) -> SparseTensor:
    """`sparse_reduce_sum` as a SparseTensor of the non-empty groups (SparseReduceSumSparse)."""
    return _reduce("Sum", True, sp_input, axis, keepdims, reduction_axes, keep_dims)  # type: ignore[no-any-return]


def sparse_reduce_max(sp_input: Any, axis: Any = None, keepdims: Any = None,
                      reduction_axes: Any = None, keep_dims: Any = None) -> Tensor:
    """The maximum of the stored values over `axis` (implicit zeros take no part; an
    empty group gives 0), a dense tensor (`tf.sparse.reduce_max`; SparseReduceMax)."""
    return _reduce("Max", False, sp_input, axis, keepdims, reduction_axes, keep_dims)  # type: ignore[no-any-return]


def sparse_reduce_max_sparse(sp_input: Any, axis: Any = None, keepdims: Any = None,
                             reduction_axes: Any = None, keep_dims: Any = None) -> SparseTensor:
    """`sparse_reduce_max` as a SparseTensor (SparseReduceMaxSparse)."""
    return _reduce("Max", True, sp_input, axis, keepdims, reduction_axes, keep_dims)  # type: ignore[no-any-return]


def _broadcast_static(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None:
        return TensorShape(None)
    return TensorShape([x.value if x.value is not None else y.value for x, y in zip(a, b)])


def sparse_add(a: Any, b: Any, threshold: Any = None, thresh: Any = None) -> Any:
    """`a + b` with at least one SparseTensor (`tf.sparse.add`): SparseAdd for two
    (sums with magnitude below `threshold` dropped), SparseTensorDenseAdd (a dense
    tensor) when one is dense."""
    threshold = threshold if threshold is not None else (thresh if thresh is not None else 0)
    sparse = (SparseTensor, SparseTensorValue)
    if not any(isinstance(x, sparse) for x in (a, b)):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if all(isinstance(x, sparse) for x in (a, b)):
        a, b = convert_to_sparse_tensor(a), convert_to_sparse_tensor(b)
        real = a.values.dtype.base_dtype
        real = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(real, real)
        with a.graph.as_default():
            th = convert_to_tensor(threshold, dtype=real, name="threshold")
            ind, val, shape = apply_op("SparseAdd", name="SparseAdd", a_indices=a.indices,
                                       a_values=a.values, a_shape=a.dense_shape,
                                       b_indices=b.indices, b_values=b.values,
                                       b_shape=b.dense_shape, thresh=th)
        a.shape.assert_is_compatible_with(b.shape)
        static = _broadcast_static(a.shape, b.shape)
        return SparseTensor(ind, val, static.as_list() if static.is_fully_defined() else shape)
    if isinstance(b, sparse):
        a, b = b, a
    a = convert_to_sparse_tensor(a)
    return apply_op("SparseTensorDenseAdd", name="SparseTensorDenseAdd", a_indices=a.indices,
                    a_values=a.values, a_shape=a.dense_shape, b=b)


def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """Softmax over the last dimension of the stored values of each row
    (`tf.sparse.softmax`); the values come in sorted index order, as TensorFlow's."""
    g = sp_input.graph
    with g.as_default(), g.name_scope(name or "SparseSoftmax"):
        out = apply_op("SparseSoftmax", name="SparseSoftmax", sp_indices=sp_input.indices,
                       sp_values=sp_input.values, sp_shape=sp_input.dense_shape)
    return SparseTensor(sp_input.indices, out, sp_input.dense_shape)


def _sparse_minmax(op_type: str, sp_a: Any, sp_b: Any, name: str | None) -> SparseTensor:
    g = graph_of([sp_a.values, sp_b.values])
    with g.as_default(), g.name_scope(name or op_type) as scope:
        ind, val = apply_op(op_type, name=scope, a_indices=sp_a.indices, a_values=sp_a.values,
                            a_shape=sp_a.dense_shape, b_indices=sp_b.indices,
                            b_values=sp_b.values, b_shape=sp_b.dense_shape)
    return SparseTensor(ind, val, sp_a.dense_shape)


def sparse_maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """Elementwise maximum of two SparseTensors (a missing entry counts as 0)."""
    return _sparse_minmax("SparseSparseMaximum", sp_a, sp_b, name)


def sparse_minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """Elementwise minimum of two SparseTensors (a missing entry counts as 0)."""
    return _sparse_minmax("SparseSparseMinimum", sp_a, sp_b, name)


# --- sparse (op) dense: the operators and the softmax gradient's helper ----------------------
_TRUEDIV = {dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32, dtypes.uint16: dtypes.float32,
            dtypes.int16: dtypes.float32, dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64}


def sparse_dense_cwise(op_name: str, op_type: str, sp: SparseTensor, y: Any) -> SparseTensor:
    """`sp (op) y` as TensorFlow's operator: under a scope `op_name`, y converted to the
    sparse dtype; `truediv` casts integer operands to floats first."""
    g = sp.graph
    with g.as_default(), g.name_scope(op_name) as scope:
        y = convert_to_tensor(y, dtype=sp.dtype.base_dtype, name="y")
        values = sp.values
        if op_name == "truediv":
            to = _TRUEDIV.get(values.dtype.base_dtype)
            if to is not None:
                values, y = math_ops.cast(values, to), math_ops.cast(y, to)
        out = apply_op(op_type, name=scope, sp_indices=sp.indices, sp_values=values,
                       sp_shape=sp.dense_shape, dense=y)
    return SparseTensor(sp.indices, out, sp.dense_shape)


def sparse_dense_cwise_add(sp_t: SparseTensor, dense_t: Any) -> SparseTensor:
    """The stored values plus the dense tensor broadcast to them (SparseDenseCwiseAdd)."""
    out = apply_op("SparseDenseCwiseAdd", name="SparseDenseCwiseAdd", sp_indices=sp_t.indices,
                   sp_values=sp_t.values, sp_shape=sp_t.dense_shape, dense=dense_t)
    return SparseTensor(sp_t.indices, out, sp_t.dense_shape)
