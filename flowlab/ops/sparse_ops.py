"""`tf.sparse_to_dense`: a dense tensor from the coordinates and values of its nonzero
entries (the SparseToDense op, TensorFlow's declaration and gradient).

The indices are a scalar, a vector (one coordinate per value of a 1-D output) or a
[n, rank] matrix; with `validate_indices` they must be in bounds, in row-major order
and unique (TensorFlow's messages name the first that is not); without it, a repeated
index keeps the last value.  The gradient reaches the values (the output gradient
gathered at the indices) and the default value (the rest of it).
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.array_shapes import constant_value_as_shape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def
from flowlab.ops.slicing import gather_nd

__all__ = ["sparse_to_dense"]


def _sparse_to_dense_shape(op: Operation) -> list[TensorShape]:
    indices, shape = op.inputs[0].shape, op.inputs[1].shape
    if indices.ndims is not None and indices.ndims > 2:
        raise ValueError(f"Shape must be at most rank 2 but is rank {indices.ndims}")
    if shape.ndims is not None and shape.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {shape.ndims}")
    return [constant_value_as_shape(op.inputs[1])]


op_def("SparseToDense",
       inputs=["sparse_indices: Tindices", "output_shape: Tindices", "sparse_values: T",
               "default_value: T"],
       outputs=["dense: T"],
       attrs=["validate_indices: bool = true", "T: type", "Tindices: {int32, int64}"],
       shape_fn=_sparse_to_dense_shape)


def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any,
                    default_value: Any = 0, validate_indices: bool = True,
                    name: str | None = None) -> Any:
    """A dense tensor of `output_shape`, `sparse_values` at `sparse_indices` and
    `default_value` elsewhere (`tf.sparse_to_dense`).

        >>> sparse_to_dense([[0, 1], [1, 2]], [2, 3], [5, 6])   # [[0, 5, 0], [0, 0, 6]]
    """
    return apply_op("SparseToDense", name=name, sparse_indices=sparse_indices,
                    output_shape=output_shape, sparse_values=sparse_values,
                    default_value=default_value, validate_indices=validate_indices)


@gradient("SparseToDense")
def _sparse_to_dense_grad(op: Operation, grad: Any) -> list[Any]:
    sparse_indices, output_shape, _, _ = op.inputs
    values_grad = gather_nd(grad, sparse_indices)
    default_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(values_grad)
    return [array_ops.zeros_like(sparse_indices), array_ops.zeros_like(output_shape),
            values_grad, default_grad]
