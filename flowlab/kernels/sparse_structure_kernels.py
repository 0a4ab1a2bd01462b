"""CPU kernels of the SparseTensor rearrangements (ops: flowlab.ops.sparse_structure_ops),
with TensorFlow's checks in its order and its messages.

Orders, as TensorFlow's kernels leave them: SparseReorder sorts row-major (stable);
SparseConcat offsets each input along the concat dimension and sorts the result;
SparseSlice and SparseSplit keep the input order;
SparseFillEmptyRows emits rows in order, a row's entries in input order.  SparseSlice's
output dimension is `size` while the box ends inside the input, else what is left
of it (never negative) -- TensorFlow's rule, also for a negative start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.registry import CPU, kernel
from flowlab.kernels.sparse_common import bad, check_sparse, dims, order
from flowlab.ops import sparse_structure_ops  # noqa: F401  (declares the ops)


@kernel("SparseReorder", devices=CPU)
def sparse_reorder(ctx: Any, ind: Any, vals: Any, shape: Any) -> Any:
    check_sparse(ind, vals, shape)
    perm = order(ind)
    return ind[perm], vals[perm]


@kernel("SparseReshape", devices=CPU)
def sparse_reshape(ctx: Any, ind: Any, in_shape: Any, target: Any) -> Any:
    if ind.ndim != 2:
        raise bad(f"Input indices should be a matrix but received shape {dims(ind.shape)}")
    if in_shape.ndim != 1:
        raise bad(f"Input shape should be a vector but received shape {dims(in_shape.shape)}")
    if target.ndim != 1:
        raise bad(f"Target shape should be a vector but received shape {dims(target.shape)}")
    if ind.shape[1] != in_shape.size:
        raise bad("Input tensor rank must match input shape length.")
    dense_size = int(np.prod(in_shape, dtype=np.int64)) if in_shape.size else 1
    out, product, unknown = [], 1, -1
    for d, size in enumerate(int(s) for s in target):
        if size == -1:
            if unknown != -1:
                raise bad(f"only one output dimension may be -1, not both {unknown} and {d}")
            unknown = d
            out.append(1)
        else:
            if size < 0:
                raise bad(f"size {d} must be non-negative, not {size}")
            product *= size
            out.append(size)
    if unknown != -1:
        if product <= 0:
            raise bad("reshape cannot infer the missing input size for an empty tensor unless all "
                      "specified input sizes are non-zero")
        missing = dense_size // product
        if product * missing != dense_size:
            raise bad(f"Input to reshape is a SparseTensor with {dense_size} dense values, but the "
                      f"requested shape requires a multiple of {product}. input_shape="
                      f"{dims(in_shape)} output_shape={dims(out)}")
        out[unknown] = missing
    if int(np.prod(out, dtype=np.int64)) != dense_size:
        raise bad(f"Input to reshape is a tensor with {dense_size} dense values, but the requested "
                  f"shape has {int(np.prod(out, dtype=np.int64))}. input_shape={dims(in_shape)} "
                  f"output_shape={dims(out)}")
    out_shape = np.array(out, np.int64)
    if ind.shape[0] == 0:
        return np.zeros((0, len(out)), np.int64), out_shape
    in_strides = np.cumprod([1] + [int(s) for s in in_shape[::-1]])[:-1][::-1].astype(np.int64)
    linear = ind.astype(np.int64) @ in_strides
    out_ind = np.stack(np.unravel_index(linear, out), axis=1) if out else np.zeros((ind.shape[0], 0))
    return out_ind.astype(np.int64), out_shape


@kernel("SparseConcat", devices=CPU)
def sparse_concat(ctx: Any, *args: Any) -> Any:
    n = ctx.attrs["N"]
    inds, vals, shapes = args[:n], args[n:2 * n], args[2 * n:]
    for i in range(n):
        if inds[i].ndim != 2:
            raise bad(f"Input indices should be a matrix but received shape {dims(inds[i].shape)} "
                      f"at position {i}")
        if vals[i].ndim != 1:
            raise bad(f"Input values should be a vector but received shape {dims(vals[i].shape)} "
                      f"at position {i}")
        if shapes[i].ndim != 1:
            raise bad(f"Input shapes should be a vector but received shape {dims(shapes[i].shape)} "
                      f"at position {i}")
    rank = shapes[0].size
    attr = ctx.attrs["concat_dim"]
    axis = attr + rank if attr < 0 else attr
    if not 0 <= axis < rank:
        raise bad(f"Concat dimension must be in range [{-rank}, {rank}), got {attr}")
    for i in range(1, n):
        if shapes[i].size != rank:
            raise bad(f"Ranks of all input tensors must match: expected {rank} but got "
                      f"{shapes[i].size} at position {i}")
        for d in range(rank):
            if d != axis and shapes[i][d] != shapes[0][d]:
                raise bad(f"Input shapes must match: expected {int(shapes[0][d])} for dimension {d} "
                          f"but got {int(shapes[i][d])} at position {i}")
    for i in range(n):
        check_sparse(inds[i], vals[i], shapes[i])
    parts, offset = [], 0
    for i in range(n):
        moved = inds[i].astype(np.int64, copy=True)
        moved[:, axis] += offset
        offset += int(shapes[i][axis])
        parts.append(moved)
    out_ind = np.concatenate(parts, axis=0)
    out_val = np.concatenate(vals)
    perm = order(out_ind)  # TensorFlow reorders the result, whatever the axis
    out_ind, out_val = out_ind[perm], out_val[perm]
    out_shape = shapes[0].astype(np.int64, copy=True)
    out_shape[axis] = offset
    return out_ind, out_val, out_shape


def _slice_box(shape: Any, start: Any, size: Any) -> tuple[np.ndarray, np.ndarray]:
    rank = shape.size
    if start.size != rank:
        raise bad(f"Expected start to be a vector of length {rank} but got length {start.size}")
    if size.size != rank:
        raise bad(f"Expected size to be a vector of length {rank} but got length {size.size}")
    for s in size.tolist():
        if s < 0:
            raise bad(f"Expected a non-negative size, got {s}")
    return start.astype(np.int64), size.astype(np.int64)


@kernel("SparseSlice", devices=CPU)
def sparse_slice(ctx: Any, ind: Any, vals: Any, shape: Any, start: Any, size: Any) -> Any:
    for what, t, want in (("indices", ind, 2), ("values", vals, 1), ("shape", shape, 1),
                          ("start", start, 1), ("size", size, 1)):
        if t.ndim != want:
            kind = "matrix" if want == 2 else "vector"
            raise bad(f"Input {what} should be a {kind} but received shape {dims(t.shape)}")
    start, size = _slice_box(shape, start, size)
    check_sparse(ind, vals, shape)
    hit = np.all((ind >= start) & (ind < start + size), axis=1) if ind.shape[0] else np.zeros(0, bool)
    full = shape.astype(np.int64)
    out_shape = np.maximum(np.where(start + size < full, size, full - start), 0)
    return (ind[hit] - start).astype(np.int64).reshape(-1, shape.size), vals[hit], out_shape


@kernel("SparseSliceGrad", devices=CPU)
def sparse_slice_grad(ctx: Any, grad: Any, in_ind: Any, start: Any, out_ind: Any) -> Any:
    if in_ind.ndim != 2 or out_ind.ndim != 2:
        raise bad(f"input_indices and output_indices should be matrices but received shapes: "
                  f"{dims(in_ind.shape)} and {dims(out_ind.shape)}")
    if grad.ndim != 1 or grad.size != out_ind.shape[0]:
        raise bad(f"backprop_val_grad must be a vector with as many entries as output_indices has "
                  f"rows; got shapes {dims(grad.shape)} and {dims(out_ind.shape)}")
    out = np.zeros(in_ind.shape[0], grad.dtype)
    j = 0
    for i in range(in_ind.shape[0]):  # both lists are in input order
        if j < out_ind.shape[0] and np.array_equal(in_ind[i] - start, out_ind[j]):
            out[i] = grad[j]
            j += 1
    if j != out_ind.shape[0]:
        raise bad(f"Elements of backprop_val_grad aren't all propagated. Num elements: "
                  f"{out_ind.shape[0]}, used: {j}")
    return out


@kernel("SparseSplit", devices=CPU)
def sparse_split(ctx: Any, split_dim: Any, ind: Any, vals: Any, shape: Any) -> Any:
    num = ctx.attrs["num_split"]
    if np.ndim(split_dim) != 0:
        raise bad(f"split_dim should be a scalar but received shape {dims(np.shape(split_dim))}")
    if ind.ndim != 2:
        raise bad(f"Input indices should be a matrix but received shape {dims(ind.shape)}")
    if vals.ndim != 1:
        raise bad(f"Input values should be a vector but received shape {dims(vals.shape)}")
    if shape.ndim != 1:
        raise bad(f"Input shapes should be a vector but received shape {dims(shape.shape)}")
    rank = shape.size
    d = int(split_dim)
    axis = d + rank if d < 0 else d
    if not 0 <= axis < rank:
        raise bad(f"Input axis should be in range [{-rank}, {rank}), got {d}")
    dim = int(shape[axis])
    if not 1 <= num <= dim:
        raise bad(f"Input num_split should be between 1 and the splitting dimension size ({dim}), "
                  f"got {num}")
    check_sparse(ind, vals, shape)
    small, extra = dim // num, dim % num
    sizes = [small + 1 if s < extra else small for s in range(num)]
    starts = np.cumsum([0] + sizes)
    col = ind[:, axis].astype(np.int64)
    which = np.searchsorted(starts, col, side="right") - 1
    out_ind, out_val, out_shape = [], [], []
    for s in range(num):
        sel = which == s
        moved = ind[sel].astype(np.int64, copy=True)
        moved[:, axis] -= starts[s]
        out_ind.append(moved)
        out_val.append(vals[sel])
        sh = shape.astype(np.int64, copy=True)
        sh[axis] = sizes[s]
        out_shape.append(sh)
    return [*out_ind, *out_val, *out_shape]  # the list outputs, flattened


@kernel("SparseFillEmptyRows", devices=CPU)
def sparse_fill_empty_rows(ctx: Any, ind: Any, vals: Any, shape: Any, default: Any) -> Any:
    if np.ndim(default) != 0:
        raise bad(f"default_value must be a scalar, saw: {dims(np.shape(default))}")
    if ind.ndim != 2:
        raise bad(f"indices must be a matrix, saw: {dims(ind.shape)}")
    if vals.ndim != 1:
        raise bad(f"values must be a vector, saw: {dims(vals.shape)}")
    if shape.ndim != 1:
        raise bad(f"dense_shape must be a vector, saw: {dims(shape.shape)}")
    n, rank = ind.shape
    if n != vals.size:
        raise bad(f"The length of `values` ({vals.size}) must match the first dimension of "
                  f"`indices` ({n}).")
    if shape.size != rank:
        raise bad(f"The length of `dense_shape` ({shape.size}) must match the second dimension of "
                  f"`indices` ({rank}).")
    rows = int(shape[0]) if rank else 0
    if rows == 0 and n:
        raise bad(f"Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = {n}")
    r = ind[:, 0].astype(np.int64)
    wrong = np.flatnonzero((r < 0) | (r >= rows))
    if wrong.size:
        i = int(wrong[0])
        raise bad(f"indices({i}, 0) is invalid: {r[i]} >= {rows}")
    counts = np.bincount(r, minlength=rows) if n else np.zeros(rows, np.int64)
    empty = counts == 0
    per_row = np.where(empty, 1, counts)
    row_start = np.concatenate([[0], np.cumsum(per_row)[:-1]]).astype(np.int64)
    total = int(per_row.sum())
    out_ind = np.zeros((total, rank), np.int64)
    out_val = np.empty(total, dtype=vals.dtype)
    empty_rows = np.flatnonzero(empty)
    out_ind[row_start[empty_rows], 0] = empty_rows
    out_val[row_start[empty_rows]] = default
    # A row's entries in input order: a stable sort by row, each at its row's start + rank.
    by_row = np.argsort(r, kind="stable")
    before = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    reverse = np.empty(n, np.int64)
    reverse[by_row] = row_start[r[by_row]] + (np.arange(n) - before[r[by_row]])
    out_ind[reverse] = ind
    out_val[reverse] = vals
    return out_ind, out_val, empty, reverse


@kernel("SparseFillEmptyRowsGrad", devices=CPU)
def sparse_fill_empty_rows_grad(ctx: Any, reverse: Any, grad: Any) -> Any:
    if reverse.ndim != 1:
        raise bad(f"reverse_index_map must be a vector, saw: {dims(reverse.shape)}")
    if grad.ndim != 1:
        raise bad(f"grad_values must be a vector, saw: {dims(grad.shape)}")
    full = grad.size
    rev = reverse.astype(np.int64)
    wrong = np.flatnonzero((rev < 0) | (rev >= full))
    if wrong.size:
        raise bad(f"Elements in reverse index must be in [0, {full}) but got {rev[wrong[0]]}")
    d_values = grad[rev]
    visited = np.zeros(full, bool)
    visited[rev] = True
    rest = grad[~visited]
    # Summed in order, as TensorFlow's loop (cumsum is sequential).
    d_default = np.cumsum(rest, dtype=grad.dtype)[-1] if rest.size else np.zeros((), grad.dtype)
    return d_values, np.asarray(d_default, grad.dtype)[()]
