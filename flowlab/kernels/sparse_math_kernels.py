"""CPU kernels of the SparseTensor arithmetic (ops: flowlab.ops.sparse_math_ops), with
TensorFlow's checks in its order and its messages.

Numerics follow TensorFlow's CPU kernels: SparseTensorDenseMatMul adds
`value * b[k, :]` into `out[m, :]` one stored value at a time in input order (so
float32 rounding matches); the reductions sort a copy, group it by the kept
dimensions and reduce each group's stored values (an empty group is 0, also for
max); SparseAdd and SparseSparseMaximum/Minimum merge the two index lists in one
ordered pass without checking the order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel
from flowlab.kernels.sparse_common import (
    bad,
    check_sparse,
    compare,
    dims,
    first_out_of_bounds,
    group_starts,
    order,
)
from flowlab.ops import sparse_math_ops  # noqa: F401  (declares the ops)


@kernel("SparseTensorDenseMatMul", devices=CPU)
def sparse_tensor_dense_matmul(ctx: Any, ind: Any, vals: Any, a_shape: Any, b: Any) -> Any:
    adj_a, adj_b = ctx.attrs["adjoint_a"], ctx.attrs["adjoint_b"]
    if b.ndim != 2:
        raise bad("Tensor 'b' is not a matrix")
    if a_shape.ndim != 1:
        raise bad("Tensor 'a_shape' is not a vector")
    if a_shape.size != 2:
        raise bad("Tensor 'a_shape' must have 2 elements")
    if vals.ndim != 1:
        raise bad("Tensor 'a_values' is not a vector")
    if ind.ndim != 2:
        raise bad("Tensor 'a_indices' is not a matrix")
    if ind.shape[0] != vals.size:
        raise bad("Number of rows of a_indices does not match number of entries in a_values")
    if ind.shape[1] != a_shape.size:
        raise bad("Number of columns of a_indices does not match number of entries in a_shape")
    rows, inner = (int(a_shape[1]), int(a_shape[0])) if adj_a else (int(a_shape[0]), int(a_shape[1]))
    b_inner, cols = (b.shape[1], b.shape[0]) if adj_b else (b.shape[0], b.shape[1])
    if inner != b_inner:
        raise bad(f"Cannot multiply A and B because inner dimension does not match: {inner} vs. "
                  f"{b_inner}.  Did you forget a transpose?  Dimensions of A: [{int(a_shape[0])}, "
                  f"{int(a_shape[1])}).  Dimensions of B: {dims(b.shape)}")
    m_col, k_col = (1, 0) if adj_a else (0, 1)
    m, k = ind[:, m_col].astype(np.int64), ind[:, k_col].astype(np.int64)
    wrong = np.flatnonzero((k < 0) | (k >= inner) | (m < 0) | (m >= rows))
    if wrong.size:  # TensorFlow checks k, then m, row by row
        i = int(wrong[0])
        if not 0 <= k[i] < inner:
            raise bad(f"k ({k[i]}) from index[{i},{k_col}] out of bounds (>={inner})")
        raise bad(f"m ({m[i]}) from index[{i},{m_col}] out of bounds (>={rows})")
    bb = np.conj(b).T if adj_b else b
    va = np.conj(vals) if adj_a else vals
    out = np.zeros((rows, cols), dtype=b.dtype)
    if ind.shape[0] and cols:
        np.add.at(out, m, va[:, None] * bb[k])
    return out


def _reduce_groups(ind: Any, vals: Any, shape: Any, axes: Any) -> tuple[Any, ...]:
    """Validate; the kept and dropped dims, each group's key and reduced value."""
    rank = shape.size
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise bad(f"Invalid reduction dimension {a}, for input with {rank} dimensions.")
    check_sparse(ind, vals, shape)
    drop = sorted({a % rank for a in np.asarray(axes).reshape(-1).tolist()})
    keep = [d for d in range(rank) if d not in drop]
    perm = order(ind, keep + drop)
    keys, vals = ind[perm][:, keep], vals[perm]
    return keep, drop, keys, vals, group_starts(keys)


def _group_values(kind: str, vals: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if not starts.size:
        return np.zeros(0, vals.dtype)
    return (np.maximum if kind == "max" else np.add).reduceat(vals, starts).astype(vals.dtype)


def _reduce_dense(kind: str) -> Any:
    def run(ctx: Any, ind: Any, vals: Any, shape: Any, axes: Any) -> Any:
        keep, drop, keys, vals, starts = _reduce_groups(ind, vals, shape, axes)
        out_dims = [int(shape[d]) for d in keep]
        out = np.zeros(out_dims, dtype=vals.dtype)
        flat = out.reshape(-1)
        strides = (np.cumprod([1] + out_dims[::-1])[:-1][::-1] if out_dims else np.zeros(0)).astype(np.int64)
        at = keys[starts].astype(np.int64) @ strides if starts.size else np.zeros(0, np.int64)
        wrong = np.flatnonzero((at < 0) | (at >= flat.size))
        if wrong.size:
            raise errors.InternalError(
                None, None, f"Obtained a write index of {int(at[wrong[0]])} which is outside of bounds of "
                            f"[0, {flat.size})")
        flat[at] = _group_values(kind, vals, starts)
        if ctx.attrs["keep_dims"]:
            out = out.reshape([1 if d in drop else int(shape[d]) for d in range(shape.size)])
        return out
    return run


def _reduce_sparse(kind: str) -> Any:
    def run(ctx: Any, ind: Any, vals: Any, shape: Any, axes: Any) -> Any:
        keep, drop, keys, vals, starts = _reduce_groups(ind, vals, shape, axes)
        keep_dims = ctx.attrs["keep_dims"]
        width = shape.size if keep_dims else len(keep)
        out_ind = np.zeros((starts.size, width), np.int64)
        out_ind[:, keep if keep_dims else slice(None)] = keys[starts]
        out_shape = np.array([1 if d in drop else int(shape[d]) for d in range(shape.size)
                              if keep_dims or d not in drop], np.int64)
        return out_ind, _group_values(kind, vals, starts), out_shape
    return run


for _k in ("Sum", "Max"):
    kernel(f"SparseReduce{_k}", devices=CPU)(_reduce_dense(_k.lower()))
    kernel(f"SparseReduce{_k}Sparse", devices=CPU)(_reduce_sparse(_k.lower()))


def _check_pair(a_ind: Any, a_vals: Any, a_shape: Any, b_ind: Any, b_vals: Any, b_shape: Any) -> None:
    """SparseAdd's checks of its two operands."""
    if a_ind.ndim != 2 or b_ind.ndim != 2:
        raise bad(f"Input indices should be matrices but received shapes: {dims(a_ind.shape)} and "
                  f"{dims(b_ind.shape)}")
    if a_vals.ndim != 1 or b_vals.ndim != 1:
        raise bad(f"Input values should be vectors but received shapes: {dims(a_vals.shape)} and "
                  f"{dims(b_vals.shape)}")
    if a_ind.shape[0] != a_vals.size or b_ind.shape[0] != b_vals.size:
        raise bad(f"Expected {a_ind.shape[0]} and {b_ind.shape[0]} non-empty input values, got "
                  f"{a_vals.size} and {b_vals.size}")
    if a_shape.ndim != 1 or b_shape.ndim != 1:
        raise bad(f"Input shapes should be a vector but received shapes {dims(a_shape.shape)} and "
                  f"{dims(b_shape.shape)}")
    if a_ind.shape[1] != b_ind.shape[1]:
        raise bad(f"Input indices must have the same dimension, got {a_ind.shape[1]} and "
                  f"{b_ind.shape[1]}")
    if a_shape.size != b_shape.size:
        raise bad(f"Operands do not have the same ranks; got shapes: {dims(a_shape)} and "
                  f"{dims(b_shape)}")
    for d in range(a_shape.size):
        if a_shape[d] != b_shape[d]:
            raise bad(f"Operands' shapes do not match: got {int(a_shape[d])} and "
                      f"{int(b_shape[d])} for dimension {d}")


def _strictly_ordered(ind: np.ndarray) -> bool:
    if ind.shape[0] < 2:
        return True
    differs = ind[1:] != ind[:-1]
    first = np.argmax(differs, axis=1)
    rows = np.arange(ind.shape[0] - 1)
    return bool(differs.any(axis=1).all() and np.all(ind[1:][rows, first] > ind[:-1][rows, first]))


def _merge(a_ind: Any, b_ind: Any) -> tuple[np.ndarray, np.ndarray]:
    """TensorFlow's one-pass merge of two index lists: per output entry, the row of `a`
    and the row of `b` it comes from (-1: absent)."""
    na, nb = a_ind.shape[0], b_ind.shape[0]
    if _strictly_ordered(a_ind) and _strictly_ordered(b_ind):
        # Ordered operands (the usual case): a stable sort of both lists is the merge.
        both = np.concatenate([a_ind, b_ind]).astype(np.int64)
        perm = order(both)
        keys = both[perm]
        pair = np.zeros(perm.size, bool)
        if perm.size > 1:
            pair[1:] = np.all(keys[1:] == keys[:-1], axis=1)
        first = ~pair
        ia = np.where(perm < na, perm, -1)
        ib = np.where(perm >= na, perm - na, -1)
        ib_next = np.concatenate([ib[1:], [-1]])
        ib = np.where(np.concatenate([pair[1:], [False]]), ib_next, ib)
        return ia[first], ib[first]
    out_a, out_b = [], []
    i = j = 0
    while i < na and j < nb:
        c = compare(a_ind[i], b_ind[j])
        out_a.append(i if c <= 0 else -1)
        out_b.append(j if c >= 0 else -1)
        i += c <= 0
        j += c >= 0
    out_a += list(range(i, na)) + [-1] * (nb - j)
    out_b += [-1] * (na - i) + list(range(j, nb))
    return np.array(out_a, np.int64), np.array(out_b, np.int64)


@kernel("SparseAdd", devices=CPU)
def sparse_add(ctx: Any, a_ind: Any, a_vals: Any, a_shape: Any, b_ind: Any, b_vals: Any,
               b_shape: Any, thresh: Any) -> Any:
    _check_pair(a_ind, a_vals, a_shape, b_ind, b_vals, b_shape)
    if np.ndim(thresh) != 0:
        raise bad(f"The magnitude threshold must be a scalar: got shape {dims(np.shape(thresh))}")
    ia, ib = _merge(a_ind, b_ind)
    both = (ia >= 0) & (ib >= 0)
    rows = np.where((ia >= 0)[:, None], a_ind[np.maximum(ia, 0)] if a_ind.shape[0] else 0,
                    b_ind[np.maximum(ib, 0)] if b_ind.shape[0] else 0).astype(np.int64)
    values = np.where(ia >= 0, a_vals[np.maximum(ia, 0)] if a_vals.size else 0,
                      b_vals[np.maximum(ib, 0)] if b_vals.size else 0).astype(a_vals.dtype)
    values[both] = a_vals[ia[both]] + b_vals[ib[both]]
    keep = ~both | (thresh <= np.abs(values))  # only sums are thresholded, as TensorFlow's kernel
    out_ind = rows[keep].reshape(-1, a_ind.shape[1])
    return out_ind, values[keep], a_shape.astype(np.int64)


@kernel("SparseAddGrad", devices=CPU)
def sparse_add_grad(ctx: Any, grad: Any, a_ind: Any, b_ind: Any, sum_ind: Any) -> Any:
    at = {tuple(r): k for k, r in enumerate(sum_ind.tolist())}
    a_grad = np.zeros(a_ind.shape[0], grad.dtype)
    b_grad = np.zeros(b_ind.shape[0], grad.dtype)
    for dst, ind in ((a_grad, a_ind), (b_grad, b_ind)):
        for i, r in enumerate(ind.tolist()):
            k = at.get(tuple(r))
            if k is not None:  # a sum dropped by the threshold gets no gradient
                dst[i] = grad[k]
    return a_grad, b_grad


@kernel("SparseTensorDenseAdd", devices=CPU)
def sparse_tensor_dense_add(ctx: Any, ind: Any, vals: Any, shape: Any, b: Any) -> Any:
    if ind.ndim != 2:
        raise bad(f"Input a_indices should be a matrix but received shape: {dims(ind.shape)}")
    if vals.ndim != 1 or shape.ndim != 1:
        raise bad(f"Inputs a_values and a_shape should be vectors but received shapes: "
                  f"{dims(vals.shape)} and {dims(shape.shape)}")
    if shape.size != b.ndim:
        raise bad(f"Two operands have different ranks; received: {shape.size} and {b.ndim}")
    if not 1 <= b.ndim <= 5:
        raise bad(f"Only tensors with ranks between 1 and 5 are currently supported.  Tensor rank: {b.ndim}")
    for d in range(b.ndim):
        if shape[d] != b.shape[d]:
            raise bad(f"Dimension {d} does not equal (no broadcasting is supported): sparse side "
                      f"{int(shape[d])} vs dense side {b.shape[d]}")
    wrong = np.flatnonzero(((ind < 0) | (ind >= np.asarray(b.shape, np.int64))).reshape(-1))
    if wrong.size:  # the first in row-major order
        i, d = divmod(int(wrong[0]), ind.shape[1])
        raise bad(f"Sparse tensor has an invalid index on dimension {d}: a_indices({i},{d}) "
                  f"= {int(ind[i, d])}, dense tensor shape: {' '.join(map(str, b.shape))}")
    out = np.array(b, copy=True)
    if ind.shape[0]:
        np.add.at(out, tuple(ind.astype(np.int64).T), vals)
    return out


@kernel("SparseSoftmax", devices=CPU)
def sparse_softmax(ctx: Any, ind: Any, vals: Any, shape: Any) -> Any:
    if ind.ndim != 2:
        raise bad(f"Input should be a matrix but received shape: {dims(ind.shape)}")
    if vals.ndim != 1:
        raise bad(f"Input should be a vector but received shape: {dims(vals.shape)}")
    if shape.size < 2:
        raise bad(f"Input should have rank >= 2, but received shape: {' '.join(map(str, shape.tolist()))}")
    if ind.shape[0] != vals.size:
        raise bad(f"Indices and values should have the same number of rows: got {ind.shape[0]} "
                  f"and {vals.size}")
    check_sparse(ind, vals, shape)
    perm = order(ind)
    ind, vals = ind[perm], vals[perm]
    if not vals.size:
        return vals.copy()
    starts = group_starts(ind[:, :-1])
    group = np.repeat(np.arange(starts.size), np.diff(np.append(starts, vals.size)))
    e = np.exp(vals - np.maximum.reduceat(vals, starts)[group])
    return (e / np.add.reduceat(e, starts)[group]).astype(vals.dtype)


def _minmax(fn: Any) -> Any:
    def run(ctx: Any, a_ind: Any, a_vals: Any, a_shape: Any, b_ind: Any, b_vals: Any, b_shape: Any) -> Any:
        _check_pair(a_ind, a_vals, a_shape, b_ind, b_vals, b_shape)
        for ind in (a_ind, b_ind):
            r = first_out_of_bounds(ind, a_shape)
            if r is not None:
                raise bad(f"Sparse index tuple indices[{r}, :] = {dims(ind[r]).replace(',', ', ')} "
                          "is out of bounds")
        ia, ib = _merge(a_ind, b_ind)
        zero = np.zeros((), a_vals.dtype)
        av = np.where(ia >= 0, a_vals[np.maximum(ia, 0)] if a_vals.size else zero, zero)
        bv = np.where(ib >= 0, b_vals[np.maximum(ib, 0)] if b_vals.size else zero, zero)
        rows = np.where((ia >= 0)[:, None], a_ind[np.maximum(ia, 0)] if a_ind.shape[0] else 0,
                        b_ind[np.maximum(ib, 0)] if b_ind.shape[0] else 0).astype(np.int64)
        return rows.reshape(-1, a_ind.shape[1]), fn(av, bv).astype(a_vals.dtype)
    return run


kernel("SparseSparseMaximum", devices=CPU)(_minmax(np.maximum))
kernel("SparseSparseMinimum", devices=CPU)(_minmax(np.minimum))


def _cwise(kind: str) -> Any:
    def run(ctx: Any, ind: Any, vals: Any, shape: Any, dense: Any) -> Any:
        if ind.ndim != 2:
            raise bad(f"Input sp_indices should be a matrix but received shape: {dims(ind.shape)}")
        if vals.ndim != 1 or shape.ndim != 1:
            raise bad(f"Inputs sp_values and sp_shape should be vectors but received shapes: "
                      f"{dims(vals.shape)} and {dims(shape.shape)}")
        if ind.shape[0] != vals.size:
            raise bad(f"The first dimension of values and indices should match. ({vals.size} vs. "
                      f"{ind.shape[0]})")
        lhs, rhs = [int(d) for d in shape], list(dense.shape)
        ok = len(lhs) >= len(rhs) and all(r in (1, s) for s, r in zip(lhs[::-1], rhs[::-1]))
        if not ok:
            raise bad("SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible "
                      f"shapes: {dims(lhs)} vs. {dims(rhs)}")
        if kind == "div" and dense.size and not np.all(dense):
            raise bad("SparseDenseCwiseDiv cannot divide by zero,but input dense tensor contains zero ")
        if first_out_of_bounds(ind, np.asarray(lhs, np.int64)) is not None:
            raise bad("Provided indices are out-of-bounds w.r.t. dense side with broadcasted shape")
        full = np.broadcast_to(dense.reshape([1] * (len(lhs) - len(rhs)) + rhs), lhs)
        d = full[tuple(ind.astype(np.int64).T)] if ind.shape[0] else np.zeros(0, dense.dtype)
        if kind == "mul":
            return (vals * d).astype(vals.dtype)
        if kind == "add":
            return (vals + d).astype(vals.dtype)
        if vals.dtype.kind in "iu":  # C++ integer division truncates
            return (np.sign(vals) * np.sign(d) * (np.abs(vals) // np.abs(d))).astype(vals.dtype)
        return (vals / d).astype(vals.dtype)
    return run


for _k in ("Mul", "Div", "Add"):
    kernel(f"SparseDenseCwise{_k}", devices=CPU)(_cwise(_k.lower()))
