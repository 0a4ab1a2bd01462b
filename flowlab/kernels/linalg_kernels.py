"""Kernels of `flowlab.ops.linalg_ops` and `linalg_diag`: NumPy's batched `linalg`
(which loops over leading dimensions as TensorFlow's kernels do) behind TensorFlow's
conventions, written over `ctx.xp` (cupy has the same `linalg` functions) except
MatrixTriangularSolve (CPU only: NumPy has no triangular solver, so it solves the
masked triangle with `linalg.solve`, and TensorFlow's inf/NaN for a singular one
needs a host fallback) and MatrixSolveLs (CPU only: `lstsq` has no batched form).

Conventions kept: a singular matrix gives InvalidArgumentError in MatrixInverse /
MatrixSolve ("Input is not invertible." / "Input matrix is not invertible."), but 0
from MatrixDeterminant and (0, -inf) from LogMatrixDeterminant; a Cholesky of a
matrix that is not positive definite gives NaNs, not an error; Svd and Qr return the
reduced factors unless `full_matrices`; Svd's `v` is V (not V^H); an empty batch or
0x0 matrix is fine (det 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.errors import InvalidArgumentError
from flowlab.kernels.registry import CPU, kernel
from flowlab.ops.linalg_diag import diag_length, diag_matrix_dims


def _out(xp: Any, r: Any, dtype: Any) -> Any:
    r = xp.asarray(r).astype(dtype, copy=False)
    return r[()] if r.ndim == 0 else r


def _square(x: Any, what: str = "Input matrix must be square.") -> None:
    if x.ndim < 2:
        raise InvalidArgumentError(None, None, f"Input tensor 0 must have rank >= 2, got {x.ndim}")
    if x.shape[-1] != x.shape[-2]:
        raise InvalidArgumentError(None, None, f"{what} ({x.shape[-2]} vs. {x.shape[-1]})")


def _adj(xp: Any, x: Any) -> Any:
    return xp.conj(xp.swapaxes(x, -1, -2))


def _compute(x: Any) -> Any:
    """float16 is computed in float32 (LAPACK has no half precision)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


@kernel("MatrixInverse")
def matrix_inverse(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _square(x)
    a = _compute(_adj(xp, x) if ctx.attrs["adjoint"] else x)
    if a.size == 0:
        return xp.zeros_like(x)
    try:
        inv = xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(None, None, "Input is not invertible.") from None
    if not bool(xp.all(xp.isfinite(inv))) and bool(xp.all(xp.isfinite(a))):
        raise InvalidArgumentError(None, None, "Input is not invertible.")
    return _out(xp, inv, x.dtype)


@kernel("MatrixDeterminant")
def matrix_determinant(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _square(x)
    if x.shape[-1] == 0:
        return _out(xp, xp.ones(x.shape[:-2]), x.dtype)
    with np.errstate(all="ignore"):
        return _out(xp, xp.linalg.det(_compute(x)), x.dtype)


@kernel("LogMatrixDeterminant")
def log_matrix_determinant(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _square(x)
    if x.shape[-1] == 0:
        return _out(xp, xp.ones(x.shape[:-2]), x.dtype), _out(xp, xp.zeros(x.shape[:-2]), x.dtype)
    with np.errstate(all="ignore"):
        sign, logabs = xp.linalg.slogdet(_compute(x))
    return _out(xp, sign, x.dtype), _out(xp, logabs, x.dtype)


@kernel("Cholesky")
def cholesky(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _square(x)
    if x.size == 0:
        return xp.zeros_like(x)
    a = _compute(x)
    lower = xp.tril(a)
    # Only the lower triangle is read (as Eigen's LLT): symmetrize from it.
    herm = lower + xp.conj(xp.swapaxes(xp.tril(a, -1), -1, -2))
    try:
        out = xp.linalg.cholesky(herm)
    except np.linalg.LinAlgError:
        # TensorFlow logs a warning and fills the lower triangle with NaNs.
        flat = herm.reshape((-1,) + herm.shape[-2:])
        res = []
        for m in flat:
            try:
                res.append(xp.linalg.cholesky(m))
            except np.linalg.LinAlgError:
                res.append(xp.tril(xp.full(m.shape, np.nan, dtype=m.dtype)))
        out = xp.stack(res).reshape(herm.shape)
    return _out(xp, out, x.dtype)


@kernel("MatrixSolve")
def matrix_solve(ctx: Any, a: Any, b: Any) -> Any:
    xp = ctx.xp
    _square(a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise InvalidArgumentError(None, None, "All input tensors must have the same outer dimensions.")
    if b.shape[-2] != a.shape[-1]:
        raise InvalidArgumentError(None, None, "Input matrix and right-hand side must have the same number of rows.")
    if a.size == 0 or b.size == 0:
        return xp.zeros(b.shape, dtype=b.dtype)
    m = _compute(_adj(xp, a) if ctx.attrs["adjoint"] else a)
    try:
        out = xp.linalg.solve(m, _compute(b))
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(None, None, "Input matrix is not invertible.") from None
    return _out(xp, out, b.dtype)


@kernel("MatrixTriangularSolve", devices=CPU)
def matrix_triangular_solve(ctx: Any, a: Any, b: Any) -> Any:
    _square(a)
    if b.ndim < 2:
        raise InvalidArgumentError(None, None, f"Input tensor 1 must have rank >= 2, got {b.ndim}")
    if b.shape[-2] != a.shape[-1]:
        raise InvalidArgumentError(None, None, "Input matrix and right-hand side must have the same number of rows.")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise InvalidArgumentError(None, None, f"Incompatible shapes: {list(a.shape)} vs. {list(b.shape)}") from None
    out_shape = batch + b.shape[-2:]
    if a.size == 0 or b.size == 0 or 0 in out_shape:
        return np.zeros(out_shape, dtype=b.dtype)
    t = np.tril(a) if ctx.attrs["lower"] else np.triu(a)
    if ctx.attrs["adjoint"]:
        t = np.conj(np.swapaxes(t, -1, -2))
    t = np.broadcast_to(_compute(t), batch + a.shape[-2:])
    rhs = np.broadcast_to(_compute(b), out_shape)
    with np.errstate(all="ignore"):
        try:
            out = np.linalg.solve(t, rhs)
        except np.linalg.LinAlgError:
            out = _substitute(t, rhs, lower=bool(ctx.attrs["lower"]) != bool(ctx.attrs["adjoint"]))
    return _out(np, out, b.dtype)


def _substitute(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Forward/back substitution, which gives TensorFlow's inf/NaN for a zero pivot."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-1], b.shape[:-1]) + b.shape[-1:], dtype=np.result_type(t, b))
    order = range(n) if lower else range(n - 1, -1, -1)
    for i in order:
        acc = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, :], x)
        x[..., i, :] = acc / t[..., i, i][..., None]
    return x


@kernel("MatrixSolveLs", devices=CPU, host_memory=("l2_regularizer",))
def matrix_solve_ls(ctx: Any, a: Any, b: Any, l2: Any) -> Any:
    if a.ndim < 2 or b.ndim < 2 or a.shape[:-2] != b.shape[:-2]:
        raise InvalidArgumentError(None, None, "All input tensors must have the same outer dimensions.")
    if a.shape[-2] != b.shape[-2]:
        raise InvalidArgumentError(None, None, "Input matrix and right-hand side must have the same number of rows.")
    out = np.zeros(a.shape[:-2] + (a.shape[-1], b.shape[-1]), dtype=b.dtype)
    if out.size == 0 or a.shape[-2] == 0:
        return out
    for idx in np.ndindex(a.shape[:-2]):
        # Minimum-norm least squares (TensorFlow: complete orthogonal decomposition).
        out[idx] = np.linalg.lstsq(_compute(a[idx]), _compute(b[idx]), rcond=None)[0]
    return out


@kernel("Qr")
def qr(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    if x.ndim < 2:
        raise InvalidArgumentError(None, None, f"Input tensor 0 must have rank >= 2, got {x.ndim}")
    m, n = x.shape[-2:]
    full = ctx.attrs["full_matrices"]
    if x.size == 0:
        p = m if full else min(m, n)
        q = xp.zeros(x.shape[:-2] + (m, p), dtype=x.dtype)
        if full or m <= n:
            q = q + xp.eye(m, p, dtype=x.dtype)
        return q, xp.zeros(x.shape[:-2] + (p, n), dtype=x.dtype)
    q, r = xp.linalg.qr(_compute(x), mode="complete" if full else "reduced")
    return _out(xp, q, x.dtype), _out(xp, r, x.dtype)


@kernel("Svd")
def svd(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    if x.ndim < 2:
        raise InvalidArgumentError(None, None, f"Input tensor 0 must have rank >= 2, got {x.ndim}")
    real = np.zeros((), x.dtype).real.dtype
    m, n = x.shape[-2:]
    if not ctx.attrs["compute_uv"]:
        if x.size == 0:
            return xp.zeros(x.shape[:-2] + (min(m, n),), dtype=x.dtype), xp.zeros(0, x.dtype), xp.zeros(0, x.dtype)
        s = xp.linalg.svd(_compute(x), compute_uv=False)
        return _out(xp, s.astype(real), x.dtype), xp.zeros(0, x.dtype), xp.zeros(0, x.dtype)
    full = bool(ctx.attrs["full_matrices"])
    if x.size == 0:
        p = min(m, n)
        u = xp.zeros(x.shape[:-2] + (m, m if full else p), x.dtype) + xp.eye(m, m if full else p, dtype=x.dtype)
        v = xp.zeros(x.shape[:-2] + (n, n if full else p), x.dtype) + xp.eye(n, n if full else p, dtype=x.dtype)
        return xp.zeros(x.shape[:-2] + (p,), x.dtype), u, v
    u, s, vh = xp.linalg.svd(_compute(x), full_matrices=full)
    return _out(xp, s, x.dtype), _out(xp, u, x.dtype), _out(xp, _adj(xp, vh), x.dtype)


@kernel("SelfAdjointEigV2")
def self_adjoint_eig(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    _square(x)
    if x.size == 0:
        return xp.zeros(x.shape[:-1], x.dtype), xp.zeros(x.shape if ctx.attrs["compute_v"] else (0,), x.dtype)
    if not ctx.attrs["compute_v"]:
        return _out(xp, xp.linalg.eigvalsh(_compute(x)), x.dtype), xp.zeros(0, x.dtype)
    e, v = xp.linalg.eigh(_compute(x))
    return _out(xp, e, x.dtype), _out(xp, v, x.dtype)


@kernel("Cross")
def cross(ctx: Any, a: Any, b: Any) -> Any:
    xp = ctx.xp
    if a.shape != b.shape:
        raise InvalidArgumentError(None, None, f"Both inputs must be of same shape: {list(a.shape)} vs. "
                                   f"{list(b.shape)}")
    if a.ndim < 1 or a.shape[-1] != 3:
        raise InvalidArgumentError(None, None, f"Trailing dimension must be 3; got {a.shape[-1] if a.ndim else 0}")
    return _out(xp, xp.cross(a, b), a.dtype)


# --- bands and diagonals ------------------------------------------------------------------
@kernel("MatrixBandPart", host_memory=("num_lower", "num_upper"))
def matrix_band_part(ctx: Any, x: Any, lower: Any, upper: Any) -> Any:
    xp = ctx.xp
    lower, upper = int(lower), int(upper)
    m, n = x.shape[-2:]
    if lower > m:
        raise InvalidArgumentError(None, None, f"num_lower must be negative or less or equal to number of rows "
                                   f"({m}) got: {lower}")
    if upper > n:
        raise InvalidArgumentError(None, None, f"num_upper must be negative or less or equal to number of columns "
                                   f"({n}) got: {upper}")
    i = xp.arange(m)[:, None]
    j = xp.arange(n)[None, :]
    keep = xp.ones((m, n), dtype=bool)
    if lower >= 0:
        keep &= (i - j) <= lower
    if upper >= 0:
        keep &= (j - i) <= upper
    return xp.where(keep, x, xp.zeros((), x.dtype))


def _k(k: Any) -> tuple[int, int]:
    ks = np.asarray(k).reshape(-1).tolist()
    if not 1 <= len(ks) <= 2:
        raise InvalidArgumentError(None, None, "diag_index must be a scalar or vector with 1 or 2 elements.")
    lo, hi = int(ks[0]), int(ks[-1])
    if lo > hi:
        raise InvalidArgumentError(None, None, "lower_diag_index must not be larger than upper_diag_index: "
                                   f"{lo} > {hi}")
    return lo, hi


def diag_index(lo: int, hi: int, align: str, rows: int, cols: int) -> tuple[np.ndarray, ...]:
    """(i, j, row, col): matrix entry (i, j) of diagonal d is entry (row, col) of the
    packed [num_diags, max_len] diagonals."""
    max_len = max(0, max(diag_length(rows, cols, d) for d in range(lo, hi + 1)))
    parts: list[list[np.ndarray]] = [[], [], [], []]
    for d in range(lo, hi + 1):
        length = diag_length(rows, cols, d)
        if length <= 0:
            continue
        left = align in ("LEFT_LEFT", "LEFT_RIGHT") if d >= 0 else align in ("LEFT_LEFT", "RIGHT_LEFT")
        offset = 0 if left else max_len - length
        t = np.arange(length)
        for part, vals in zip(parts, (t + max(-d, 0), t + max(d, 0), np.full(length, hi - d), t + offset)):
            part.append(vals)
    return tuple(np.concatenate(p) if p else np.zeros(0, np.int64) for p in parts) + (max_len,)  # type: ignore[return-value]


@kernel("MatrixDiagV3", host_memory=("k", "num_rows", "num_cols"))
def matrix_diag_v3(ctx: Any, diagonal: Any, k: Any, num_rows: Any, num_cols: Any, pad: Any) -> Any:
    xp = ctx.xp
    lo, hi = _k(k)
    num_diags = hi - lo + 1
    diags = diagonal if lo != hi else diagonal[..., None, :]
    if diags.ndim < 2 or diags.shape[-2] != num_diags:
        raise InvalidArgumentError(None, None, f"The number of diagonals provided in the input does not match the "
                                   f"lower_diag_index and upper_diag_index range. Expected {num_diags}")
    max_len = diags.shape[-1]
    rows, cols = int(num_rows), int(num_cols)
    rows, cols, min_rows, min_cols = diag_matrix_dims(max_len, lo, hi, rows, cols)
    if rows < min_rows or cols < min_cols or (rows != min_rows and cols != min_cols):
        raise InvalidArgumentError(None, None, f"The number of rows or columns is not consistent with the specified "
                                   f"d_lower, d_upper, and diagonal. num_rows {rows} num_cols {cols}")
    i, j, r, c = (xp.asarray(v) for v in diag_index(lo, hi, ctx.attrs["align"], rows, cols)[:4])
    out = xp.full(diags.shape[:-2] + (rows, cols), pad, dtype=diagonal.dtype)
    out[..., i, j] = diags[..., r, c]
    return out


@kernel("MatrixDiagPartV3", host_memory=("k",))
def matrix_diag_part_v3(ctx: Any, x: Any, k: Any, pad: Any) -> Any:
    xp = ctx.xp
    lo, hi = _k(k)
    if x.ndim < 2:
        raise InvalidArgumentError(None, None, f"input must be at least 2-dim, received shape: {list(x.shape)}")
    rows, cols = x.shape[-2:]
    if (rows and lo <= -rows) or (cols and hi >= cols):
        raise InvalidArgumentError(None, None, f"Diagonal out of bounds: k = ({lo}, {hi}) for a {rows}x{cols} "
                                   "matrix")
    i, j, r, c, max_len = diag_index(lo, hi, ctx.attrs["align"], rows, cols)
    i, j, r, c = (xp.asarray(v) for v in (i, j, r, c))
    out = xp.full(x.shape[:-2] + (hi - lo + 1, max_len), pad, dtype=x.dtype)
    out[..., r, c] = x[..., i, j]
    return out[..., 0, :] if lo == hi else out


@kernel("MatrixSetDiagV3", host_memory=("k",))
def matrix_set_diag_v3(ctx: Any, x: Any, diagonal: Any, k: Any) -> Any:
    lo, hi = _k(k)
    rows, cols = x.shape[-2:]
    i, j, r, c, max_len = diag_index(lo, hi, ctx.attrs["align"], rows, cols)
    i, j, r, c = (ctx.xp.asarray(v) for v in (i, j, r, c))
    diags = diagonal if lo != hi else diagonal[..., None, :]
    want = x.shape[:-2] + (hi - lo + 1, max_len)
    if diags.shape != want:
        raise InvalidArgumentError(None, None, f"diagonal must have shape {list(want if lo != hi else want[:-2] + want[-1:])}"
                                   f", received shape {list(diagonal.shape)}")
    out = x.copy()
    out[..., i, j] = diags[..., r, c]
    return out


@kernel("Diag")
def diag(ctx: Any, d: Any) -> Any:
    xp = ctx.xp
    n = d.size
    out = xp.zeros((n, n), dtype=d.dtype)
    out[xp.arange(n), xp.arange(n)] = d.reshape(-1)
    return out.reshape(d.shape + d.shape)


@kernel("DiagPart")
def diag_part(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    half = x.ndim // 2
    if x.ndim % 2 or x.shape[:half] != x.shape[half:]:
        raise InvalidArgumentError(None, None, f"Invalid shape {list(x.shape)}: dimensions i and i + rank/2 must "
                                   "be equal")
    n = int(np.prod(x.shape[:half], dtype=np.int64))
    flat = x.reshape(n, n)
    return _out(xp, flat[xp.arange(n), xp.arange(n)].reshape(x.shape[:half]), x.dtype)
