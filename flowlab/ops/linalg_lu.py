"""LU factorization with partial pivoting and what TensorFlow builds on it:
`tf.linalg.lu` (the Lu op: the packed factors and the row permutation p with
input[..., p, :] = L @ U), `lu_reconstruct`, `lu_solve`, `lu_matrix_inverse` (TensorFlow's
composites from band_part, set_diag, gather and triangular solves), and
`tf.linalg.normalize` (tensor / norm, and the norm).

The Lu op has no gradient, as TensorFlow 2.21 registers none for it
(tf.gradients raises LookupError in both).  The composites are
differentiable in their lower_upper and rhs inputs.  Kernel: flowlab.kernels.linalg_lu_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import no_gradient_defined
from flowlab.ops.linalg_diag import matrix_band_part, matrix_set_diag
from flowlab.ops.linalg_ops import triangular_solve
from flowlab.ops.op_def import op_def

__all__ = ["lu", "lu_reconstruct", "lu_solve", "lu_matrix_inverse", "normalize"]


def _lu_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is None:
        return [TensorShape(None), TensorShape(None)]
    if s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    d = s.as_list()
    if d[-1] is not None and d[-2] is not None and d[-1] != d[-2]:
        raise ValueError(f"Dimensions must be equal, but are {d[-2]} and {d[-1]}")
    n = d[-1] if d[-1] is not None else d[-2]
    return [TensorShape(d[:-2] + [n, n]), TensorShape(d[:-2] + [n])]


op_def("Lu", inputs=["input: T"], outputs=["lu: T", "p: output_idx_type"],
       attrs=["T: {float64, float32, float16, complex64, complex128}",
              "output_idx_type: {int32, int64} = int32"], shape_fn=_lu_shape)
no_gradient_defined("Lu")


def lu(input: Any, output_idx_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """(lu, p): L (unit lower, below the diagonal) and U packed in one matrix, and the
    permutation with input[p] = L @ U."""
    return apply_op("Lu", input=convert_to_tensor(input, name="input"),
                    output_idx_type=dtypes.as_dtype(output_idx_type), name=name or "Lu")


def _unit_lower(lower_upper: Tensor) -> Tensor:
    shape = array_ops.shape(lower_upper)
    return matrix_set_diag(matrix_band_part(lower_upper, -1, 0),
                           array_ops.ones(shape[:-1], dtype=lower_upper.dtype.base_dtype))


def lu_reconstruct(lower_upper: Any, perm: Any, validate_args: bool = False, name: str | None = None) -> Tensor:
    """The matrix whose LU factorization is (lower_upper, perm)."""
    with get_default_graph().name_scope(name or "lu_reconstruct"):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        perm = convert_to_tensor(perm, name="perm")
        upper = matrix_band_part(lower_upper, 0, -1)
        x = math_ops.matmul(_unit_lower(lower_upper), upper)
        if lower_upper.shape.ndims == 2:
            x = slicing.gather(x, array_ops.invert_permutation(perm))
        else:
            from flowlab.ops.functional_ops import map_fn

            shape = array_ops.shape(lower_upper)
            batch = math_ops.reduce_prod(shape[:-2])
            d = shape[-1]
            x = array_ops.reshape(x, array_ops.stack([batch, d, d]))
            p = map_fn(array_ops.invert_permutation, array_ops.reshape(perm, array_ops.stack([batch, d])))
            rows = array_ops.broadcast_to(array_ops.expand_dims(math_ops.range(batch), 1), array_ops.stack([batch, d]))
            x = array_ops.reshape(slicing.gather_nd(x, array_ops.stack([rows, p], axis=-1)), shape)
        x.set_shape(lower_upper.shape)
        return x


def lu_solve(lower_upper: Any, perm: Any, rhs: Any, validate_args: bool = False, name: str | None = None) -> Tensor:
    """The solution of A X = rhs for the A whose LU factorization is (lower_upper, perm)."""
    with get_default_graph().name_scope(name or "lu_solve"):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        perm = convert_to_tensor(perm, name="perm")
        rhs = convert_to_tensor(rhs, name="rhs", dtype=lower_upper.dtype.base_dtype)
        if rhs.shape.ndims == 2 and perm.shape.ndims == 1:
            permuted = slicing.gather(rhs, perm, axis=-2)
        else:
            rhs_shape = array_ops.shape(rhs)
            broadcast_batch = array_ops.shape(perm)[:-1] if rhs.shape.ndims == 2 else rhs_shape[:-2]
            d, m = rhs_shape[-2], rhs_shape[-1]
            rhs_b = array_ops.broadcast_to(rhs, array_ops.concat([broadcast_batch, [d, m]], axis=0))
            batch = math_ops.reduce_prod(broadcast_batch)
            flat_rhs = array_ops.reshape(rhs_b, array_ops.stack([batch, d, m]))
            p = array_ops.reshape(array_ops.broadcast_to(perm, array_ops.concat([broadcast_batch, [d]], axis=0)),
                                  array_ops.stack([batch, d]))
            rows = array_ops.broadcast_to(array_ops.expand_dims(math_ops.range(batch), 1), array_ops.stack([batch, d]))
            permuted = array_ops.reshape(slicing.gather_nd(flat_rhs, array_ops.stack([rows, p], axis=-1)),
                                         array_ops.shape(rhs_b))
        lower = _unit_lower(lower_upper)
        return triangular_solve(lower_upper, triangular_solve(lower, permuted), lower=False)


def lu_matrix_inverse(lower_upper: Any, perm: Any, validate_args: bool = False, name: str | None = None) -> Tensor:
    """The inverse of the matrix whose LU factorization is (lower_upper, perm)."""
    from flowlab.ops.tensordot_ops import eye

    with get_default_graph().name_scope(name or "lu_matrix_inverse"):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        perm = convert_to_tensor(perm, name="perm")
        shape = array_ops.shape(lower_upper)
        return lu_solve(lower_upper, perm, eye(shape[-1], batch_shape=shape[:-2], dtype=lower_upper.dtype.base_dtype))


def normalize(tensor: Any, ord: Any = "euclidean", axis: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """(tensor / norm, norm), the norm kept with keepdims=True (tf.norm's `ord`, `axis`)."""
    from flowlab.ops.clip_ops import norm

    with get_default_graph().name_scope(name or "normalize"):
        tensor = convert_to_tensor(tensor)
        n = norm(tensor, ord, axis, keepdims=True)
        n = math_ops.cast(n, tensor.dtype.base_dtype)
        return tensor / n, n
