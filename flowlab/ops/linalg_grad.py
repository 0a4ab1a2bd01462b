"""Gradients of the linear-algebra ops: TensorFlow's linalg_grad.py formulas, built from
flowlab's own ops (matmul, matrix_solve, triangular solves, band and diagonal ops).

Cholesky and SelfAdjointEigV2 read one triangle of a self-adjoint input; their
gradients are the symmetric (Cholesky) or lower-triangular (eig) forms TensorFlow
returns, so finite differences agree only through a symmetric construction of the
input (the gradient table builds them so).  Svd's gradient needs distinct singular
values, and for full_matrices only |M - N| <= 1, as TensorFlow's.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.linalg_ops import (
    adjoint,
    cross,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_inverse,
    matrix_set_diag,
    matrix_solve,
    matrix_transpose,
    self_adjoint_eig,
    svd,
)
from flowlab.ops.math_grad import broadcast_reduction_axes

_mm = math_ops.matmul


def _tri_solve(a: Any, b: Any, lower: bool, adjoint_a: bool) -> Any:
    return apply_op("MatrixTriangularSolve", matrix=a, rhs=b, lower=lower, adjoint=adjoint_a,
                    name="MatrixTriangularSolve")


@gradient("MatrixInverse")
def _matrix_inverse_grad(op: Operation, grad: Any) -> Any:
    ainv = op.outputs[0]
    adj = op.get_attr("adjoint")
    return [-_mm(ainv, _mm(grad, ainv, adjoint_a=adj, adjoint_b=not adj), adjoint_a=not adj)]


@gradient("MatrixDeterminant")
def _matrix_determinant_grad(op: Operation, grad: Any) -> Any:
    a, c = op.inputs[0], op.outputs[0]
    a_adj_inv = matrix_inverse(a, adjoint=True)
    multipliers = array_ops.reshape(grad * c, array_ops.concat([array_ops.shape(c), [1, 1]], 0))
    return [multipliers * a_adj_inv]


@gradient("LogMatrixDeterminant")
def _log_matrix_determinant_grad(op: Operation, _: Any, grad_b: Any) -> Any:
    a_adj_inv = matrix_inverse(op.inputs[0], adjoint=True)
    return [array_ops.expand_dims(array_ops.expand_dims(grad_b, -1), -1) * a_adj_inv]


def _eye_like(x: Any) -> Any:
    """Identity matrices shaped like the batch of square matrices x."""
    n = array_ops.shape(x)[-1]
    eye = math_ops.cast(math_ops.equal(array_ops.expand_dims(math_ops.range(n), 1),
                                       array_ops.expand_dims(math_ops.range(n), 0)), x.dtype)
    return array_ops.broadcast_to(eye, array_ops.shape(x))


@gradient("Cholesky")
def _cholesky_grad(op: Operation, grad: Any) -> Any:
    l_ = op.outputs[0]
    l_inverse = _tri_solve(l_, _eye_like(l_), lower=True, adjoint_a=False)
    middle = _mm(l_, grad, adjoint_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = _mm(_mm(l_inverse, middle, adjoint_a=True), l_inverse)
    grad_a += adjoint(grad_a)
    return [grad_a * 0.5]


@gradient("MatrixSolve")
def _matrix_solve_grad(op: Operation, grad: Any) -> Any:
    a, c = op.inputs[0], op.outputs[0]
    adj = op.get_attr("adjoint")
    grad_b = matrix_solve(a, grad, adjoint=not adj)
    grad_a = -_mm(c, grad_b, adjoint_b=True) if adj else -_mm(grad_b, c, adjoint_b=True)
    return [grad_a, grad_b]


def _reduce_batch(g: Any, like: Any) -> Any:
    """Sum a gradient over the batch dimensions that broadcasting added to `like`."""
    sg, sl = g.shape.as_tuple(), like.shape.as_tuple()
    if sg is None or sl is None or sg == sl or None in sg or None in sl:
        return g
    rg, rl = broadcast_reduction_axes(list(sg[:-2]), list(sl[:-2]))
    if rl:
        g = math_ops.reduce_sum(g, rl)
    return array_ops.reshape(g, list(sl))


@gradient("MatrixTriangularSolve")
def _matrix_triangular_solve_grad(op: Operation, grad: Any) -> Any:
    a, b = op.inputs
    c = op.outputs[0]
    adj, lower = op.get_attr("adjoint"), op.get_attr("lower")
    grad_b = _tri_solve(a, grad, lower=lower, adjoint_a=not adj)
    grad_a = -_mm(c, grad_b, adjoint_b=True) if adj else -_mm(grad_b, c, adjoint_b=True)
    grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
    return [_reduce_batch(grad_a, a), _reduce_batch(grad_b, b)]


def _right_tri_solve(x: Any, r: Any) -> Any:
    """x @ inv(r)^H for upper-triangular r."""
    return adjoint(_tri_solve(r, adjoint(x), lower=False, adjoint_a=False))


def _qr_grad_square_or_deep(q: Any, r: Any, dq: Any, dr: Any) -> Any:
    qdq = _mm(q, dq, adjoint_a=True)
    qdq_ = qdq - adjoint(qdq)
    rdr = _mm(r, dr, adjoint_b=True)
    rdr_ = rdr - adjoint(rdr)
    tril = matrix_band_part(qdq_ + rdr_, -1, 0)
    grad_a = _mm(q, dr + _right_tri_solve(tril, r))
    grad_b = _right_tri_solve(dq - _mm(q, qdq), r)
    return grad_a + grad_b


@gradient("Qr")
def _qr_grad(op: Operation, dq: Any, dr: Any) -> Any:
    a = op.inputs[0]
    q, r = op.outputs
    if a.dtype.is_complex:
        raise NotImplementedError("flowlab's Qr gradient is for real matrices (TensorFlow's complex "
                                  "correction term is not built)")
    s = a.shape.as_tuple()
    if s is None or s[-2] is None or s[-1] is None:
        raise NotImplementedError("QrGrad not implemented with dynamic shapes. "
                                  f"Received: {a.shape}")
    m, n = s[-2], s[-1]
    if m > n and op.get_attr("full_matrices"):
        raise NotImplementedError("QrGrad not implemented when nrows > ncols and full_matrices is true. "
                                  f"Received r.shape={r.shape} with nrows={m} and ncols={n}.")
    if m >= n:
        return [_qr_grad_square_or_deep(q, r, dq, dr)]
    # Wide: A = [X | Y] with X square; Y = Q V, dX from the square case.
    y = a[..., :, m:]
    u = r[..., :, :m]
    dv = dr[..., :, m:]
    du = dr[..., :, :m]
    dy = _mm(q, dv)
    dx = _qr_grad_square_or_deep(q, u, dq + _mm(y, dv, adjoint_b=True), du)
    return [array_ops.concat([dx, dy], -1)]


@gradient("Svd")
def _svd_grad(op: Operation, grad_s: Any, grad_u: Any, grad_v: Any) -> Any:
    a = op.inputs[0]
    s_in = a.shape.as_tuple()
    if a.dtype.is_complex and op.get_attr("compute_uv"):
        raise NotImplementedError("flowlab's Svd gradient with compute_uv is for real matrices (TensorFlow's "
                                  "complex phase term is not built)")
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, compute_uv=True, full_matrices=op.get_attr("full_matrices"))
        m, n = (s_in[-2], s_in[-1]) if s_in is not None else (None, None)
        if op.get_attr("full_matrices") and m is not None and n is not None and m != n:
            p = min(m, n)
            u, v = u[..., :, :p], v[..., :, :p]
        return [_mm(u, _mm(matrix_diag(grad_s), v, adjoint_b=True))]
    if s_in is None or s_in[-2] is None or s_in[-1] is None:
        raise NotImplementedError("SVD gradient has not been implemented for input with unknown inner "
                                  "matrix shape.")
    full = op.get_attr("full_matrices")
    m, n = s_in[-2], s_in[-1]
    if full and abs(m - n) > 1:
        raise NotImplementedError("svd gradient is not implemented for abs(m - n) > 1 when full_matrices is "
                                  f"True. Received: m={m} and n={n} from op input={a} with shape={a.shape}.")
    s, u, v = op.outputs
    use_adjoint = m > n
    if use_adjoint:
        m, n = n, m
        u, v = v, u
        grad_u, grad_v = grad_v, grad_u
    s_mat = matrix_diag(s)
    s2 = math_ops.square(s)
    # f[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it.
    f = matrix_set_diag(math_ops.reciprocal(array_ops.expand_dims(s2, -2) - array_ops.expand_dims(s2, -1)),
                        array_ops.zeros_like(s))
    s_inv_mat = matrix_diag(math_ops.reciprocal(s))
    v1 = v[..., :, :m]
    grad_v1 = grad_v[..., :, :m]
    u_gu = _mm(u, grad_u, adjoint_a=True)
    v_gv = _mm(v1, grad_v1, adjoint_a=True)
    f_u = f * u_gu
    f_v = f * v_gv
    term1_nouv = (matrix_diag(grad_s) + _mm(f_u + adjoint(f_u), s_mat) + _mm(s_mat, f_v + adjoint(f_v)))
    term1 = _mm(u, _mm(term1_nouv, v1, adjoint_b=True))
    if m == n:
        grad_a = term1
    else:
        gv1t = matrix_transpose(grad_v1, conjugate=True)
        gv1t_v1 = _mm(gv1t, v1)
        term2_nous = gv1t - _mm(gv1t_v1, v1, adjoint_b=True)
        if full:
            v2 = v[..., :, m:n]
            grad_v2 = grad_v[..., :, m:n]
            v1t_gv2 = _mm(v1, grad_v2, adjoint_a=True)
            term2_nous -= _mm(v1t_gv2, v2, adjoint_b=True)
        term2 = _mm(_mm(u, s_inv_mat), term2_nous)
        grad_a = term1 + term2
    return [matrix_transpose(grad_a, conjugate=True) if use_adjoint else grad_a]


@gradient("SelfAdjointEigV2")
def _self_adjoint_eig_grad(op: Operation, grad_e: Any, grad_v: Any) -> Any:
    e = op.outputs[0]
    if op.get_attr("compute_v"):
        v = op.outputs[1]
        f = matrix_set_diag(math_ops.reciprocal(array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)),
                            array_ops.zeros_like(e))
        grad_a = _mm(v, _mm(matrix_diag(grad_e) + f * _mm(v, grad_v, adjoint_a=True), v, adjoint_b=True))
    else:
        _, v = self_adjoint_eig(op.inputs[0])
        grad_a = _mm(v, _mm(matrix_diag(grad_e), v, adjoint_b=True))
    # The kernel reads the lower triangle: fold the symmetric gradient into it.
    grad_a = matrix_band_part(grad_a + adjoint(grad_a), -1, 0)
    return [matrix_set_diag(grad_a, 0.5 * matrix_diag_part(grad_a))]


@gradient("Cross")
def _cross_grad(op: Operation, grad: Any) -> Any:
    u, v = op.inputs
    return [cross(v, grad), cross(grad, u)]


@gradient("MatrixBandPart")
def _matrix_band_part_grad(op: Operation, grad: Any) -> Any:
    return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


@gradient("MatrixDiagV3")
def _matrix_diag_grad(op: Operation, grad: Any) -> Any:
    out = matrix_diag_part(grad, k=op.inputs[1], align=op.get_attr("align"))
    s = op.inputs[0].shape
    if s.is_fully_defined():
        out = array_ops.reshape(out, s.as_list())
    return [out, None, None, None, None]


@gradient("MatrixDiagPartV3")
def _matrix_diag_part_grad(op: Operation, grad: Any) -> Any:
    x = op.inputs[0]
    s = x.shape.as_tuple()
    align = op.get_attr("align")
    if s is not None and s[-2] is not None and s[-1] is not None:
        return [matrix_diag(grad, k=op.inputs[1], num_rows=s[-2], num_cols=s[-1], align=align), None, None]
    return [matrix_set_diag(array_ops.zeros_like(x), grad, k=op.inputs[1], align=align), None, None]


@gradient("MatrixSetDiagV3")
def _matrix_set_diag_grad(op: Operation, grad: Any) -> Any:
    k, align = op.inputs[2], op.get_attr("align")
    grad_input = matrix_set_diag(grad, array_ops.zeros_like(op.inputs[1]), k=k, align=align)
    return [grad_input, matrix_diag_part(grad, k=k, align=align), None]


@gradient("Diag")
def _diag_grad(op: Operation, grad: Any) -> Any:
    return [apply_op("DiagPart", input=grad, name="DiagPart")]


@gradient("DiagPart")
def _diag_part_grad(op: Operation, grad: Any) -> Any:
    return [apply_op("Diag", diagonal=grad, name="Diag")]
