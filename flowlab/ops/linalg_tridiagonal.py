"""Tridiagonal matrices given by their three diagonals: `tf.linalg.tridiagonal_matmul`
(TridiagonalMatMul: A @ rhs) and `tf.linalg.tridiagonal_solve` (TridiagonalSolve: the X
with A X = rhs).  `diagonals_format` is TensorFlow's: "compact" [..., 3, M] rows
(superdiagonal, main, subdiagonal; superdiag[-1] and subdiag[0] unused), "sequence"
(the three [..., M] tensors) or "matrix" (the [..., M, M] matrix itself).

Gradients are TensorFlow's (linalg_grad.py): shifts and products of the rhs and the
incoming gradient for the product; for the solve, a solve with the transposed matrix
and the three diagonals of -grad_rhs @ X^T.  Kernels: flowlab.kernels.linalg_tridiagonal_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["tridiagonal_matmul", "tridiagonal_solve"]

_T = "T: {float64, float32, complex64, complex128}"
op_def("TridiagonalMatMul", inputs=["superdiag: T", "maindiag: T", "subdiag: T", "rhs: T"], outputs=["output: T"],
       attrs=[_T], shape_fn=lambda op: [op.inputs[3].shape])
op_def("TridiagonalSolve", inputs=["diagonals: T", "rhs: T"], outputs=["output: T"],
       attrs=["partial_pivoting: bool = true", "perturb_singular: bool = false", _T],
       shape_fn=lambda op: [op.inputs[1].shape])


def _three(diagonals: Any, fmt: str) -> tuple[Tensor, Tensor, Tensor]:
    from flowlab.ops.linalg_diag import matrix_diag_part

    if fmt == "compact":
        d = convert_to_tensor(diagonals, name="diagonals")
        return d[..., 0, :], d[..., 1, :], d[..., 2, :]
    if fmt == "sequence":
        sup, main, sub = (convert_to_tensor(t) for t in diagonals)
        return sup, main, sub
    if fmt == "matrix":
        m = convert_to_tensor(diagonals, name="diagonals")
        d = m.shape.as_list() if m.shape.ndims else None
        if d and d[-1] and d[-2] and d[-1] != d[-2]:
            raise ValueError(f"Expected last two dimensions of diagonals to be same, got {d[-2]} and {d[-1]}")
        parts = matrix_diag_part(m, k=(-1, 1), padding_value=0.0, align="LEFT_RIGHT")
        return parts[..., 0, :], parts[..., 1, :], parts[..., 2, :]
    raise ValueError(f"Unrecognized diagonals_format: {fmt}")


def tridiagonal_matmul(diagonals: Any, rhs: Any, diagonals_format: str = "compact", name: str | None = None) -> Tensor:
    """A @ rhs for the tridiagonal A given by `diagonals` (rhs [..., M, N])."""
    with get_default_graph().name_scope(name or "tridiagonal_matmul"):
        sup, main, sub = _three(diagonals, diagonals_format)
        rhs = convert_to_tensor(rhs, name="rhs")
        return apply_op("TridiagonalMatMul", superdiag=array_ops.expand_dims(sup, -2),
                        maindiag=array_ops.expand_dims(main, -2), subdiag=array_ops.expand_dims(sub, -2), rhs=rhs,
                        name="TridiagonalMatMul")


def tridiagonal_solve(diagonals: Any, rhs: Any, diagonals_format: str = "compact", transpose_rhs: bool = False,
                      conjugate_rhs: bool = False, name: str | None = None, partial_pivoting: bool = True,
                      perturb_singular: bool = False) -> Tensor:
    """The X with A X = rhs for the tridiagonal A (rhs [..., M] or [..., M, K])."""
    with get_default_graph().name_scope(name or "tridiagonal_solve"):
        if diagonals_format == "compact":
            d = convert_to_tensor(diagonals, name="diagonals")
        else:
            d = array_ops.stack(list(_three(diagonals, diagonals_format)), axis=-2)
        rhs = convert_to_tensor(rhs, name="rhs")
        vector = rhs.shape.ndims is not None and d.shape.ndims is not None and rhs.shape.ndims == d.shape.ndims - 1
        if vector:
            rhs = array_ops.expand_dims(rhs, -1)
        elif transpose_rhs:
            from flowlab.ops.linalg_ops import matrix_transpose

            rhs = matrix_transpose(rhs, conjugate=conjugate_rhs)
        elif conjugate_rhs:
            rhs = math_ops.conj(rhs)
        out = apply_op("TridiagonalSolve", diagonals=d, rhs=rhs, partial_pivoting=partial_pivoting,
                       perturb_singular=perturb_singular, name="TridiagonalSolve")
        return array_ops.squeeze(out, -1) if vector else out


def _shift(x: Tensor, left: bool) -> Tensor:
    """x moved one step along the next-to-last axis, a zero row coming in."""
    rank = array_ops.rank(x)
    zeros = array_ops.zeros(array_ops.stack([rank - 2, 2]), dtype="int32")
    pad = array_ops.concat([zeros, convert_to_tensor([[0, 1], [0, 0]] if left else [[1, 0], [0, 0]])], axis=0)
    return array_ops.pad(x[..., 1:, :] if left else x[..., :-1, :], pad)


@gradient("TridiagonalMatMul")
def _tridiagonal_matmul_grad(op: Operation, grad: Tensor) -> Any:
    from flowlab.ops.linalg_ops import matrix_transpose

    sup_c, main_c, sub_c = (matrix_transpose(op.inputs[i], conjugate=True) for i in range(3))
    rhs_c = math_ops.conj(op.inputs[3])
    sup_g = math_ops.reduce_sum(_shift(rhs_c, True) * grad, axis=-1)
    main_g = math_ops.reduce_sum(rhs_c * grad, axis=-1)
    sub_g = math_ops.reduce_sum(_shift(rhs_c, False) * grad, axis=-1)
    rhs_g = _shift(sup_c * grad, False) + main_c * grad + _shift(sub_c * grad, True)
    return [array_ops.expand_dims(sup_g, -2), array_ops.expand_dims(main_g, -2), array_ops.expand_dims(sub_g, -2),
            rhs_g]


@gradient("TridiagonalSolve")
def _tridiagonal_solve_grad(op: Operation, grad: Tensor) -> Any:
    diags, x = op.inputs[0], op.outputs[0]
    diag = diags[..., 1, :]
    pad_shape = array_ops.concat([array_ops.shape(diags)[:-2], [1]], axis=0)
    zeros = array_ops.zeros(pad_shape, dtype=diags.dtype.base_dtype)
    sup_t = array_ops.concat([diags[..., 2, 1:], zeros], axis=-1)
    sub_t = array_ops.concat([zeros, diags[..., 0, :-1]], axis=-1)
    diags_t = array_ops.stack([sup_t, diag, sub_t], axis=-2)
    grad_rhs = apply_op("TridiagonalSolve", diagonals=diags_t, rhs=grad,
                        partial_pivoting=op.get_attr("partial_pivoting"),
                        perturb_singular=op.get_attr("perturb_singular"), name="TridiagonalSolve")
    d = math_ops.reduce_sum(grad_rhs * x, axis=-1)
    row_zeros = array_ops.zeros_like(x[..., :1, :])
    sup = math_ops.reduce_sum(grad_rhs * array_ops.concat([x[..., 1:, :], row_zeros], axis=-2), axis=-1)
    sub = math_ops.reduce_sum(grad_rhs * array_ops.concat([row_zeros, x[..., :-1, :]], axis=-2), axis=-1)
    return [-array_ops.stack([sup, d, sub], axis=-2), grad_rhs]

