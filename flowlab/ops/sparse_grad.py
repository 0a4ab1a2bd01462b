"""Gradients of the sparse ops, TensorFlow's graphs (sparse_grad.py and the sparse
segment part of math_grad.py): one entry per op input, None for indices and shapes.

The gradient reaches a SparseTensor's values only (its indices and dense shape are
integers).  Declared not differentiable: the ops TensorFlow declares so (SparseConcat,
SparseAddGrad) and those it gives no gradient or one that raises (SparseReshape,
SparseSplit, the max reductions and the `_sparse` sum, SparseSparseMaximum/Minimum,
SparseDenseCwiseAdd, the gradient ops themselves): flowlab's gradient is None there,
where TensorFlow raises LookupError or NotImplementedError.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.ops.linalg_ops import matrix_transpose
from flowlab.ops.math_grad import _reduced_shape
from flowlab.ops.slicing import gather, gather_nd, slice
from flowlab.ops.sparse_math_ops import sparse_add, sparse_dense_cwise_add, sparse_reduce_sum
from flowlab.ops.sparse_structure_ops import sparse_reorder
from flowlab.ops.sparse_tensor import SparseTensor

for _op in ("SparseAddGrad", "SparseConcat", "SparseReshape", "SparseSplit", "SparseSliceGrad",
            "SparseFillEmptyRowsGrad", "SparseReduceMax", "SparseReduceMaxSparse",
            "SparseReduceSumSparse", "SparseSparseMaximum", "SparseSparseMinimum",
            "SparseDenseCwiseAdd"):
    not_differentiable(_op)
for _k in ("Sum", "Mean", "SqrtN"):
    not_differentiable(f"SparseSegment{_k}Grad")
    not_differentiable(f"SparseSegment{_k}GradV2")


@gradient("SparseReorder")
def _sparse_reorder_grad(op: Operation, _: Any, values_grad: Any) -> Any:
    indices, shape = op.inputs[0], op.inputs[2]
    entries = math_ops.range(array_ops.shape(indices)[0])
    ordered = sparse_reorder(SparseTensor(indices, entries, shape))
    return [None, gather(values_grad, array_ops.invert_permutation(ordered.values)), None]


@gradient("SparseAdd")
def _sparse_add_grad(op: Operation, *grads: Any) -> Any:
    a_grad, b_grad = apply_op("SparseAddGrad", backprop_val_grad=grads[1], a_indices=op.inputs[0],
                              b_indices=op.inputs[3], sum_indices=op.outputs[0])
    a_grad.set_shape(op.inputs[1].shape)
    b_grad.set_shape(op.inputs[4].shape)
    return [None, a_grad, None, None, b_grad, None, None]


@gradient("SparseTensorDenseAdd")
def _sparse_tensor_dense_add_grad(op: Operation, grad: Any) -> Any:
    return [None, gather_nd(grad, op.inputs[0]), None, grad]


@gradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op: Operation, grad: Any) -> Any:
    indices, shape = op.inputs[0], op.inputs[2]
    kept = _reduced_shape(shape, op.inputs[3])
    scale = shape // math_ops.cast(kept, dtypes.int64)
    return [None, gather_nd(array_ops.reshape(grad, kept), indices // scale), None, None]


@gradient("SparseSlice")
def _sparse_slice_grad(op: Operation, *grads: Any) -> Any:
    val_grad = apply_op("SparseSliceGrad", backprop_val_grad=grads[1], input_indices=op.inputs[0],
                        input_start=op.inputs[3], output_indices=op.outputs[0])
    val_grad.set_shape(op.inputs[1].shape)
    return [None, val_grad, None, None, None]


@gradient("SparseTensorDenseMatMul")
def _sparse_tensor_dense_matmul_grad(op: Operation, grad: Any) -> Any:
    a_indices, a_values, a_shape, b = op.inputs
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    if a_values.dtype.base_dtype != b.dtype.base_dtype:
        raise TypeError("SparseTensorDenseMatMul op received operands with different types: "
                        f"`{a_values.dtype.base_dtype}` and `{b.dtype.base_dtype}`.")
    b_grad = apply_op("SparseTensorDenseMatMul", a_indices=a_indices, a_values=a_values,
                      a_shape=a_shape, b=grad, adjoint_a=not adj_a)
    if adj_b:
        b_grad = matrix_transpose(b_grad, conjugate=True)
    rows, cols = a_indices[:, 0], a_indices[:, 1]
    parts_a = gather(grad, cols if adj_a else rows)
    parts_b = gather(array_ops.transpose(b) if adj_b else b, rows if adj_a else cols)
    # One (1 x n) @ (n x 1) product per stored value, as TensorFlow writes it.
    ex = array_ops.expand_dims
    if not adj_a and not adj_b:
        a_grad = math_ops.matmul(ex(parts_a, -2), ex(parts_b, -2), adjoint_b=True)
    elif adj_a and not adj_b:
        a_grad = math_ops.matmul(ex(parts_a, -1), ex(parts_b, -1), adjoint_a=True)
    elif not adj_a and adj_b:
        a_grad = math_ops.matmul(ex(parts_a, -2), ex(parts_b, -1))
    else:
        a_grad = math_ops.matmul(ex(parts_a, -1), ex(parts_b, -2), adjoint_a=True, adjoint_b=True)
    return [None, array_ops.squeeze(a_grad, axis=[-2, -1]), None, b_grad]


def _cwise_mul_or_div_grad(op: Operation, grad: Any, is_mul: bool) -> Any:
    x_indices, x_shape, y = op.inputs[0], op.inputs[2], op.inputs[3]
    y_shape = math_ops.cast(array_ops.shape(y), dtypes.int64)
    num_added = array_ops.expand_dims(array_ops.size(x_shape) - array_ops.size(y_shape), 0)
    augmented = array_ops.concat([array_ops.ones(num_added, dtypes.int64), y_shape], 0)
    scaled = x_indices // (x_shape // augmented)
    scaled = slice(scaled, array_ops.concat([[0], num_added], 0), [-1, -1])
    dense_vals = gather_nd(y, scaled)
    if is_mul:
        dx, dy_val = grad * dense_vals, grad * op.inputs[1]
    else:
        dx = grad / dense_vals
        dy_val = grad * (-op.inputs[1] / math_ops.square(dense_vals))
    # Scaled indices can repeat, so TensorFlow adds them into zeros (not sparse_to_dense).
    dy = sparse_add(array_ops.zeros_like(y), SparseTensor(scaled, dy_val, y_shape))
    return [None, dx, None, dy]


@gradient("SparseDenseCwiseMul")
def _sparse_dense_cwise_mul_grad(op: Operation, grad: Any) -> Any:
    return _cwise_mul_or_div_grad(op, grad, True)


@gradient("SparseDenseCwiseDiv")
def _sparse_dense_cwise_div_grad(op: Operation, grad: Any) -> Any:
    return _cwise_mul_or_div_grad(op, grad, False)


@gradient("SparseSoftmax")
def _sparse_softmax_grad(op: Operation, grad: Any) -> Any:
    indices, shape = op.inputs[0], op.inputs[2]
    out_vals = op.outputs[0]
    sp_grad = SparseTensor(indices, grad, shape)
    sp_product = SparseTensor(indices, out_vals * grad, shape)
    sum_reduced = -sparse_reduce_sum(sp_product, [-1], keepdims=True)
    sp_sum = sparse_dense_cwise_add(sp_grad, sum_reduced)
    return [None, sp_sum.values * out_vals, None]


@gradient("SparseFillEmptyRows")
def _sparse_fill_empty_rows_grad(op: Operation, _i: Any, values_grad: Any, _e: Any, _r: Any) -> Any:
    d_values, d_default = apply_op("SparseFillEmptyRowsGrad", reverse_index_map=op.outputs[3],
                                   grad_values=values_grad)
    return [None, d_values, None, d_default]


def _segment_grad(kind: str, with_num: bool) -> Any:
    def grad_fn(op: Operation, grad: Any) -> Any:
        data, indices, segment_ids = op.inputs[:3]
        tail = [None, None] + ([None] if with_num else [])
        if op.get_attr("sparse_gradient"):
            data_shape = array_ops.shape(data)
            values, unique = apply_op(f"SparseSegment{kind}GradV2", grad=grad, indices=indices,
                                      segment_ids=segment_ids, dense_output_dim0=data_shape[0])
            return [IndexedSlices(values, unique, data_shape), *tail]
        dim0 = array_ops.shape(data)[0]
        return [apply_op(f"SparseSegment{kind}Grad", grad=grad, indices=indices,
                         segment_ids=segment_ids, output_dim0=dim0), *tail]
    return grad_fn


for _k in ("Sum", "Mean", "SqrtN"):
    gradient(f"SparseSegment{_k}")(_segment_grad(_k, False))
    gradient(f"SparseSegment{_k}WithNumSegments")(_segment_grad(_k, True))
