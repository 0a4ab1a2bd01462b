"""`tf.linalg.expm`: the matrix exponential by scaling and squaring with Padé
approximants (Higham 2005), built from graph ops exactly as TensorFlow builds it, so
its values and its gradient (through matmul, solve, where and the squaring loop) are
TensorFlow's.

The l1 norm of each matrix picks the approximant (orders 3, 5, 7 in single precision;
3, 5, 7, 9, 13 in double) and the number of squarings; a non-finite norm gives NaNs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape

__all__ = ["matrix_exponential"]

_PADE = {
    3: [120.0, 60.0, 12.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0],
}


def _pade(matrix: Tensor, order: int) -> tuple[Tensor, Tensor]:
    """(U, V) of the Padé approximant of `order`: exp(A) ~ (V - U)^-1 (V + U)."""
    from flowlab.ops import array_ops, constant_op, math_ops
    from flowlab.ops.tensordot_ops import eye

    mm = math_ops.matmul
    b = [constant_op.constant(x, matrix.dtype) for x in _PADE[order]]
    shape = array_ops.shape(matrix)
    ident = eye(shape[-2], batch_shape=shape[:-2], dtype=matrix.dtype)
    m2 = mm(matrix, matrix)
    if order == 3:
        return mm(matrix, m2 + b[1] * ident), b[2] * m2 + b[0] * ident
    m4 = mm(m2, m2)
    if order == 5:
        u = mm(matrix, m4 + b[3] * m2 + b[1] * ident)
        return u, b[4] * m4 + b[2] * m2 + b[0] * ident
    m6 = mm(m4, m2)
    if order == 7:
        u = mm(matrix, m6 + b[5] * m4 + b[3] * m2 + b[1] * ident)
        return u, b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * ident
    if order == 9:
        m8 = mm(m6, m2)
        u = mm(matrix, m8 + b[7] * m6 + b[5] * m4 + b[3] * m2 + b[1] * ident)
        return u, b[8] * m8 + b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * ident
    tmp_u = (mm(m6, m6 + b[11] * m4 + b[9] * m2) + b[7] * m6 + b[5] * m4 + b[3] * m2
             + b[1] * ident)
    tmp_v = b[12] * m6 + b[10] * m4 + b[8] * m2
    v = mm(m6, tmp_v) + b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * ident
    return mm(matrix, tmp_u), v


def matrix_exponential(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """exp(A) of each square matrix of `input` [..., M, M] (`tf.linalg.expm`)."""
    from flowlab.ops import array_ops, constant_op, linalg_ops, math_ops
    from flowlab.ops.builder import convert_to_tensor
    from flowlab.ops.cond import cond
    from flowlab.ops.while_loop import while_loop

    with get_default_graph().name_scope(name or "matrix_exponential"):
        matrix = convert_to_tensor(input, name="input")
        if matrix.shape.ndims is not None and matrix.shape.as_list()[-2:] == [0, 0]:
            return matrix
        in_shape = matrix.shape
        batch_shape: Any = TensorShape(matrix.shape.as_list()[:-2]) \
            if matrix.shape.ndims is not None else TensorShape(None)
        if not batch_shape.is_fully_defined():
            batch_shape = array_ops.shape(matrix)[:-2]
        matrix = array_ops.reshape(
            matrix, array_ops.concat(([-1], array_ops.shape(matrix)[-2:]), axis=0))
        l1_norm = math_ops.reduce_max(
            math_ops.reduce_sum(math_ops.abs(matrix),
                                axis=array_ops.size(array_ops.shape(matrix)) - 2),
            axis=-1)[..., None, None]

        def const(x: Any) -> Tensor:
            return constant_op.constant(x, l1_norm.dtype)

        def nest_where(vals: tuple[float, ...], cases: tuple[Tensor, ...]) -> Tensor:
            rest = cases[1] if len(vals) == 1 else nest_where(vals[1:], cases[1:])
            return array_ops.where_v2(math_ops.less(l1_norm, const(vals[0])), cases[0], rest)

        if matrix.dtype in (dtypes.float16, dtypes.float32, dtypes.complex64):
            maxnorm, orders = 3.925724783138660, (3, 5, 7)
            conds: tuple[float, ...] = (4.258730016922831e-001, 1.880152677804762e+000)
        elif matrix.dtype in (dtypes.float64, dtypes.complex128):
            maxnorm, orders = 5.371920351148152, (3, 5, 7, 9, 13)
            conds = (1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                     2.097847961257068e+000)
        else:
            raise ValueError(f"tf.linalg.expm does not support matrices of type {matrix.dtype}")
        squarings = math_ops.maximum(
            math_ops.floor(math_ops.log(l1_norm / const(maxnorm)) / math_ops.log(const(2.0))), 0)
        pairs = [_pade(matrix, o) for o in orders[:-1]]
        scaled = matrix / math_ops.cast(math_ops.pow(const(2.0), squarings), matrix.dtype)
        pairs.append(_pade(scaled, orders[-1]))
        u = nest_where(conds, tuple(p[0] for p in pairs))
        v = nest_where(conds, tuple(p[1] for p in pairs))
        is_finite = math_ops.is_finite(math_ops.reduce_max(l1_norm))
        nan = constant_op.constant(np.nan, matrix.dtype)
        result = cond(is_finite, lambda: linalg_ops.matrix_solve(-u + v, u + v),
                      lambda: array_ops.fill(array_ops.shape(matrix), nan))
        max_squarings = math_ops.reduce_max(squarings)

        def c(i: Tensor, _: Tensor) -> Tensor:
            return cond(is_finite, lambda: math_ops.less(i, max_squarings),
                        lambda: constant_op.constant(False))

        def b(i: Tensor, r: Tensor) -> tuple[Tensor, Tensor]:
            return i + 1, array_ops.where_v2(math_ops.less(i, squarings),
                                              math_ops.matmul(r, r), r)

        _, result = while_loop(c, b, [const(0.0), result])
        if isinstance(batch_shape, Tensor) or not in_shape.is_fully_defined():
            if not isinstance(batch_shape, Tensor):
                batch_shape = constant_op.constant(batch_shape.as_list(), dtypes.int32)
            return array_ops.reshape(
                result, array_ops.concat((batch_shape, array_ops.shape(result)[-2:]), axis=0))
        return array_ops.reshape(result, in_shape.as_list())  # exp(A) has A's shape
