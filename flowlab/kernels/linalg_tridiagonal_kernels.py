"""Kernels of TridiagonalMatMul and TridiagonalSolve (flowlab.ops.linalg_tridiagonal).
The solve builds each dense matrix and uses the array module's LU solve with partial
pivoting (TensorFlow's CPU kernel pivots the same way on the band)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel


@kernel("TridiagonalMatMul")
def tridiagonal_matmul(ctx: Any, superdiag: Any, maindiag: Any, subdiag: Any, rhs: Any) -> Any:
    xp = ctx.xp
    sup, main, sub = (xp.swapaxes(d, -1, -2) for d in (superdiag, maindiag, subdiag))  # [..., M, 1]
    out = main * rhs
    out[..., :-1, :] += sup[..., :-1, :] * rhs[..., 1:, :]
    out[..., 1:, :] += sub[..., 1:, :] * rhs[..., :-1, :]
    return out


@kernel("TridiagonalSolve", devices=CPU)
def tridiagonal_solve(ctx: Any, diagonals: Any, rhs: Any) -> Any:
    d, b = np.asarray(diagonals), np.asarray(rhs)
    if d.shape[-2] != 3:
        raise errors.InvalidArgumentError(None, None, f"Expected 3 diagonals got {d.shape[-2]}")
    m = d.shape[-1]
    a = np.zeros(d.shape[:-2] + (m, m), d.dtype)
    idx = np.arange(m)
    a[..., idx, idx] = d[..., 1, :]
    a[..., idx[:-1], idx[1:]] = d[..., 0, :-1]
    a[..., idx[1:], idx[:-1]] = d[..., 2, 1:]
    try:
        return np.linalg.solve(a, b).astype(b.dtype)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(None, None, "The matrix is not invertible.") from None
