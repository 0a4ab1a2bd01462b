"""Dense linear algebra on batches of matrices (`tf.linalg`, and TensorFlow 1.x's
top-level `tf.matrix_inverse`, `tf.cholesky`, `tf.svd`, ...).

Every op works on the innermost two dimensions of a `[..., M, N]` tensor and loops
over the batch dimensions, as TensorFlow's linalg kernels do; only
MatrixTriangularSolve broadcasts its batch dimensions.  Op types, attrs, default names
and output structures (the `Qr(q, r)` and `LogMatrixDeterminant(sign,
log_abs_determinant)` named tuples, `svd` returning `(s, u, v)`) are TensorFlow
2.21's v1 API: the diagonal family is the V3 ops with `align="RIGHT_LEFT"`.
Composites (`trace`, `logdet`, `cholesky_solve`, `lstsq`, `matvec`, `adjoint`) build
the same ops TensorFlow's Python builds.  Kernels: `flowlab.kernels.linalg_kernels`;
gradients: `flowlab.ops.linalg_grad`; the diagonal ops: `flowlab.ops.linalg_diag`.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.linalg_diag import *  # noqa: F403  (the diagonal ops)
from flowlab.ops.linalg_diag import __all__ as _diag_all
from flowlab.ops.linalg_diag import matrix_diag_part, matrix_set_diag
from flowlab.ops.math_defs import broadcast_dims
from flowlab.ops.op_def import op_def

# TensorFlow 1.x's top-level names; `flowlab.linalg` lists the `tf.linalg` ones.
__all__ = [
    "matrix_inverse", "matrix_determinant", "cholesky", "cholesky_solve", "matrix_solve",
    "matrix_triangular_solve", "matrix_solve_ls", "qr", "svd", "self_adjoint_eig", "self_adjoint_eigvals",
    "matrix_transpose", "trace", "cross", *_diag_all,
]

_LINALG = "{float64, float32, float16, complex64, complex128}"


# --- shape functions --------------------------------------------------------------------
def _matrix(op: Operation, i: int = 0, square: bool = False) -> tuple[Any, ...] | None:
    """The static shape of input i, checked to be a (square) batch of matrices."""
    s = op.inputs[i].shape.as_tuple()
    if s is None:
        return None
    if len(s) < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {len(s)}")
    if square and s[-1] is not None and s[-2] is not None and s[-1] != s[-2]:
        raise ValueError(f"Dimensions must be equal, but are {s[-2]} and {s[-1]}")
    return s


def _square_same(op: Operation) -> list[Any]:
    s = _matrix(op, square=True)
    return [TensorShape(s if s is None else _merge_last(s))]


def _merge_last(s: tuple[Any, ...]) -> tuple[Any, ...]:
    d = s[-1] if s[-1] is not None else s[-2]
    return s[:-2] + (d, d)


def _batch_only(op: Operation) -> list[Any]:
    s = _matrix(op, square=True)
    n = len(op.op_def.outputs)
    return [TensorShape(None if s is None else s[:-2])] * n


def _solve(op: Operation) -> list[Any]:
    a = _matrix(op, 0, square=True)
    b = _matrix(op, 1)
    if a is None or b is None:
        return [TensorShape(None if b is None else (None,) * (len(b) - 2) + (None, b[-1]))]
    m = a[-1] if a[-1] is not None else a[-2]
    if m is not None and b[-2] is not None and m != b[-2]:
        raise ValueError(f"Dimensions must be equal, but are {m} and {b[-2]}")
    if op.type == "MatrixTriangularSolve":
        batch = broadcast_dims(a[:-2], b[:-2])
    else:
        if len(a) != len(b):
            raise ValueError(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
        batch = tuple(x if x is not None else y for x, y in zip(a[:-2], b[:-2]))
    return [TensorShape(tuple(batch) + (m if m is not None else b[-2], b[-1]))]  # type: ignore[arg-type]


def _solve_ls(op: Operation) -> list[Any]:
    a, b = _matrix(op, 0), _matrix(op, 1)
    if a is None or b is None:
        return [TensorShape(None)]
    if a[-2] is not None and b[-2] is not None and a[-2] != b[-2]:
        raise ValueError(f"Dimensions must be equal, but are {a[-2]} and {b[-2]}")
    return [TensorShape(a[:-2] + (a[-1], b[-1]))]


def _qr(op: Operation) -> list[Any]:
    s = _matrix(op)
    if s is None:
        return [TensorShape(None)] * 2
    m, n = s[-2], s[-1]
    p = None if m is None or n is None else min(m, n)
    if op.get_attr("full_matrices"):
        return [TensorShape(s[:-2] + (m, m)), TensorShape(s[:-2] + (m, n))]
    return [TensorShape(s[:-2] + (m, p)), TensorShape(s[:-2] + (p, n))]


def _svd(op: Operation) -> list[Any]:
    s = _matrix(op)
    if s is None:
        return [TensorShape(None)] * 3
    m, n = s[-2], s[-1]
    p = None if m is None or n is None else min(m, n)
    if not op.get_attr("compute_uv"):
        return [TensorShape(s[:-2] + (p,)), TensorShape([0]), TensorShape([0])]
    full = op.get_attr("full_matrices")
    return [TensorShape(s[:-2] + (p,)), TensorShape(s[:-2] + (m, m if full else p)),
            TensorShape(s[:-2] + (n, n if full else p))]


def _eig(op: Operation) -> list[Any]:
    s = _matrix(op, square=True)
    if s is None:
        return [TensorShape(None)] * 2
    s = _merge_last(s)
    return [TensorShape(s[:-1]), TensorShape(s if op.get_attr("compute_v") else [0])]


def _cross(op: Operation) -> list[Any]:
    a, b = op.inputs[0].shape, op.inputs[1].shape
    if a.ndims is not None and b.ndims is not None and a.ndims != b.ndims:
        raise ValueError(f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}")
    s = a.merge_with(b)
    t = s.as_tuple()
    if t is not None:
        if not t:
            raise ValueError("Shape must be at least rank 1 but is rank 0")
        if t[-1] is not None and t[-1] != 3:
            raise ValueError(f"Dimension must be 3 but is {t[-1]}")
    return [s]


op_def("MatrixInverse", inputs=["input: T"], outputs=["output: T"],
       attrs=["adjoint: bool = false", f"T: {_LINALG}"], shape_fn=_square_same)
op_def("MatrixDeterminant", inputs=["input: T"], outputs=["output: T"], attrs=[f"T: {_LINALG}"],
       shape_fn=_batch_only)
op_def("LogMatrixDeterminant", inputs=["input: T"], outputs=["sign: T", "log_abs_determinant: T"],
       attrs=[f"T: {_LINALG}"], shape_fn=_batch_only)
op_def("Cholesky", inputs=["input: T"], outputs=["output: T"], attrs=[f"T: {_LINALG}"], shape_fn=_square_same)
op_def("MatrixSolve", inputs=["matrix: T", "rhs: T"], outputs=["output: T"],
       attrs=["adjoint: bool = false", f"T: {_LINALG}"], shape_fn=_solve)
op_def("MatrixTriangularSolve", inputs=["matrix: T", "rhs: T"], outputs=["output: T"],
       attrs=["lower: bool = true", "adjoint: bool = false", f"T: {_LINALG}"], shape_fn=_solve)
op_def("Qr", inputs=["input: T"], outputs=["q: T", "r: T"],
       attrs=["full_matrices: bool = false", f"T: {_LINALG}"], shape_fn=_qr)
op_def("Svd", inputs=["input: T"], outputs=["s: T", "u: T", "v: T"],
       attrs=["compute_uv: bool = true", "full_matrices: bool = false", f"T: {_LINALG}"], shape_fn=_svd)
op_def("SelfAdjointEigV2", inputs=["input: T"], outputs=["e: T", "v: T"],
       attrs=["compute_v: bool = true", f"T: {_LINALG}"], shape_fn=_eig)
op_def("MatrixSolveLs", inputs=["matrix: T", "rhs: T", "l2_regularizer: float64"], outputs=["output: T"],
       attrs=[f"T: {_LINALG}", "fast: bool = true"], shape_fn=_solve_ls)
# TensorFlow's gradient raises for fast=False, the only form the builders create.
not_differentiable("MatrixSolveLs")
op_def("Cross", inputs=["a: T", "b: T"], outputs=["product: T"], attrs=["T: real"], shape_fn=_cross)


# --- builders -----------------------------------------------------------------------------
def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """Inverse of each square matrix (or of its adjoint): `tf.matrix_inverse(a)`."""
    return apply_op("MatrixInverse", input=input, adjoint=adjoint, name=name or "MatrixInverse")


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Determinant of each square matrix: shape [...] for input [..., M, M]."""
    return apply_op("MatrixDeterminant", input=input, name=name or "MatrixDeterminant")


LogMatrixDeterminant = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


def log_matrix_determinant(input: Any, name: str | None = None) -> LogMatrixDeterminant:  # noqa: A002
    """Sign and log|det| of each square matrix (`tf.linalg.slogdet`)."""
    return LogMatrixDeterminant(*apply_op("LogMatrixDeterminant", input=input, name=name or "LogMatrixDeterminant"))


slogdet = log_matrix_determinant


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Lower-triangular L with L L^H = input (its lower triangle is read)."""
    return apply_op("Cholesky", input=input, name=name or "Cholesky")


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """X with matrix @ X = rhs (matrix^H @ X = rhs when `adjoint`)."""
    return apply_op("MatrixSolve", matrix=matrix, rhs=rhs, adjoint=adjoint, name=name or "MatrixSolve")


def matrix_triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> Tensor:
    """X with triangular(matrix) @ X = rhs; batch dimensions broadcast."""
    g = graph_of([matrix, rhs])
    with g.as_default(), g.name_scope(name or "triangular_solve"):
        return apply_op("MatrixTriangularSolve", matrix=matrix, rhs=rhs, lower=lower, adjoint=adjoint,
                        name="MatrixTriangularSolve")


def triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                     name: str | None = None) -> Tensor:
    """`tf.linalg.triangular_solve`: as `matrix_triangular_solve`."""
    return matrix_triangular_solve(matrix, rhs, lower=lower, adjoint=adjoint, name=name)


Qr = collections.namedtuple("Qr", ["q", "r"])


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> Qr:  # noqa: A002
    """QR decomposition of each matrix: `q, r = tf.qr(a)`."""
    return Qr(*apply_op("Qr", input=input, full_matrices=full_matrices, name=name or "Qr"))


def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True, name: str | None = None) -> Any:
    """Singular values `s` (descending), and `u`, `v` with a = u diag(s) v^H when
    `compute_uv`: `s, u, v = tf.svd(a)`."""
    s, u, v = apply_op("Svd", input=tensor, full_matrices=full_matrices, compute_uv=compute_uv,
                       name=name or "Svd")
    return (s, u, v) if compute_uv else s


def self_adjoint_eig(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors of each self-adjoint matrix (lower
    triangle read): `e, v = tf.self_adjoint_eig(a)`."""
    e, v = apply_op("SelfAdjointEigV2", input=tensor, compute_v=True, name=name or "SelfAdjointEigV2")
    return e, v


def self_adjoint_eigvals(tensor: Any, name: str | None = None) -> Tensor:
    """Eigenvalues (ascending) of each self-adjoint matrix."""
    e, _ = apply_op("SelfAdjointEigV2", input=tensor, compute_v=False, name=name or "SelfAdjointEigV2")
    return e


eigh, eigvalsh, inv, det, solve = self_adjoint_eig, self_adjoint_eigvals, matrix_inverse, matrix_determinant, \
    matrix_solve


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """Cross product of 3-vectors along the last dimension."""
    return apply_op("Cross", a=a, b=b, name=name or "Cross")


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Swap the last two dimensions (and conjugate when asked)."""
    g = graph_of([a])
    with g.as_default(), g.name_scope(name):
        a = convert_to_tensor(a, name="a")
        r = a.shape.ndims
        if r is None:
            rank = array_ops.rank(a)
            perm = array_ops.concat([math_ops.range(rank - 2), [rank - 1, rank - 2]], 0)
        else:
            if r < 2:
                raise ValueError(f"Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = {a} "
                                 f"with shape: {a.shape}")
            perm = list(range(r - 2)) + [r - 1, r - 2]
        return array_ops.transpose(a, perm=perm, conjugate=conjugate)


def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """Conjugate transpose of the last two dimensions."""
    g = graph_of([matrix])
    with g.as_default(), g.name_scope(name or "adjoint"):
        return matrix_transpose(convert_to_tensor(matrix, name="matrix"), conjugate=True)


def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """Matrix-vector product a @ b over the last dimension of b."""
    g = graph_of([a, b])
    with g.as_default(), g.name_scope(name or "MatVec"):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b", dtype=a.dtype.base_dtype)
        out = math_ops.matmul(a, array_ops.expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
        return array_ops.squeeze(out, axis=-1)


def trace(x: Any, name: str | None = None) -> Tensor:
    """Sum of the main diagonal of each matrix: shape [...] for [..., M, N]."""
    g = graph_of([x])
    with g.as_default(), g.name_scope(name or "Trace") as scope:
        x = convert_to_tensor(x, name="x")
        return math_ops.reduce_sum(matrix_diag_part(x), [-1], name=scope)


def logdet(matrix: Any, name: str | None = None) -> Tensor:
    """log(det(matrix)) of Hermitian positive definite matrices, through a Cholesky
    factor: 2 * sum(log(diag(L)))."""
    g = graph_of([matrix])
    with g.as_default(), g.name_scope(name or "logdet"):
        chol = cholesky(matrix)
        diag = matrix_diag_part(chol)
        if diag.dtype.is_complex:  # the diagonal of L is real: its modulus is its real part
            diag = math_ops.abs(diag)
        return 2.0 * math_ops.reduce_sum(math_ops.log(diag), axis=[-1])


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """X with A @ X = rhs, given chol = cholesky(A)."""
    g = graph_of([chol, rhs])
    with g.as_default(), g.name_scope(name or "cholesky_solve"):
        y = apply_op("MatrixTriangularSolve", matrix=chol, rhs=rhs, adjoint=False, lower=True,
                     name="MatrixTriangularSolve")
        return apply_op("MatrixTriangularSolve", matrix=chol, rhs=y, adjoint=True, lower=True,
                        name="MatrixTriangularSolve")


def _gramian_cholesky(matrix: Tensor, l2_regularizer: Any, first_kind: bool) -> Tensor:
    gramian = math_ops.matmul(matrix, matrix, adjoint_a=first_kind, adjoint_b=not first_kind)
    if isinstance(l2_regularizer, Tensor) or l2_regularizer != 0:
        n = _static_dim(matrix, -1 if first_kind else -2)
        eye = array_ops.broadcast_to(
            math_ops.cast(math_ops.equal(array_ops.expand_dims(math_ops.range(n), 1),
                                         array_ops.expand_dims(math_ops.range(n), 0)), matrix.dtype),
            array_ops.shape(gramian))
        gramian = gramian + math_ops.cast(l2_regularizer, matrix.dtype) * eye
    return cholesky(gramian)


def matrix_solve_ls(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
                    name: str | None = None) -> Tensor:
    """Least-squares solution of matrix @ X = rhs: with `fast` (the default) by the
    Cholesky factor of the regularized Gram matrix, as TensorFlow builds it; otherwise
    the minimum-norm solution of one MatrixSolveLs op (l2_regularizer unused there, as
    in TensorFlow's kernel)."""
    if not fast:
        # TensorFlow's robust path: one MatrixSolveLs op (minimum-norm solution).
        return apply_op("MatrixSolveLs", matrix=matrix, rhs=rhs,
                        l2_regularizer=convert_to_tensor(l2_regularizer, dtype=dtypes.float64, name="l2_regularizer"),
                        fast=False, name=name or "MatrixSolveLs")
    g = graph_of([matrix, rhs])
    with g.as_default(), g.name_scope(name or "matrix_solve_ls"):
        matrix = convert_to_tensor(matrix, name="matrix")
        rhs = convert_to_tensor(rhs, name="rhs", dtype=matrix.dtype.base_dtype)

        def overdetermined() -> Tensor:
            chol = _gramian_cholesky(matrix, l2_regularizer, first_kind=True)
            return cholesky_solve(chol, math_ops.matmul(matrix, rhs, adjoint_a=True))

        def underdetermined() -> Tensor:
            chol = _gramian_cholesky(matrix, l2_regularizer, first_kind=False)
            return math_ops.matmul(matrix, cholesky_solve(chol, rhs), adjoint_a=True)

        s = matrix.shape.as_tuple()
        if s is not None and s[-1] is not None and s[-2] is not None:
            return overdetermined() if s[-2] >= s[-1] else underdetermined()
        from flowlab.ops.cond import cond  # a cond only when the shape is not static, as TensorFlow

        shape = array_ops.shape(matrix)
        return cond(shape[-2] >= shape[-1], overdetermined, underdetermined)


lstsq = matrix_solve_ls


def _static_dim(a: Tensor, i: int) -> Any:
    d = a.shape.as_tuple()[i] if a.shape.ndims is not None else None  # type: ignore[index]
    return d if d is not None else array_ops.shape(a)[i]


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: str | None = None) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD; singular values below
    rcond * max(s) count as zero (rcond defaults to 10 * max(M, N) * eps)."""
    g = graph_of([a])
    with g.as_default(), g.name_scope(name or "pinv"):
        a = convert_to_tensor(a, name="a")
        np_dtype = a.dtype.as_numpy_dtype
        if rcond is None:
            rows, cols = _static_dim(a, -2), _static_dim(a, -1)
            if isinstance(rows, int) and isinstance(cols, int):
                big: Any = float(max(rows, cols))
            else:
                big = math_ops.cast(math_ops.maximum(rows, cols), a.dtype)
            rcond = 10.0 * big * np.finfo(np_dtype).eps
        rcond = convert_to_tensor(rcond, dtype=a.dtype, name="rcond")
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        cutoff = rcond * math_ops.reduce_max(s, axis=-1)
        # inf, not 0: 1 / s is then 0 without NaN gradients.
        s = array_ops.where_v2(s > array_ops.expand_dims(cutoff, -1), s, np.array(np.inf, np_dtype))
        return math_ops.matmul(v / array_ops.expand_dims(s, -2), u, adjoint_b=True)


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False, name: str | None = None) -> Tensor:
    """Number of singular values above `tol` (default eps * max(M, N) * max(s)), int32."""
    g = graph_of([a])
    with g.as_default(), g.name_scope(name or "matrix_rank"):
        a = convert_to_tensor(a, name="a")
        s = svd(a, compute_uv=False)
        if tol is None:
            shape = a.shape.as_tuple()
            if shape is not None and None not in shape[-2:]:
                m: Any = max(shape[-2:])
            else:
                m = math_ops.reduce_max(array_ops.shape(a)[-2:])
            eps = np.finfo(a.dtype.as_numpy_dtype).eps
            tol = eps * math_ops.cast(m, a.dtype) * math_ops.reduce_max(s, axis=-1, keepdims=True)
        return math_ops.reduce_sum(math_ops.cast(s > tol, dtypes.int32), axis=-1)

# Referenced here so its name is importable from this module too.
_ = matrix_set_diag
