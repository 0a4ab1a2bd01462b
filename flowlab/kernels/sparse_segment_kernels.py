"""CPU kernels of the sparse segment reductions and their gradients (ops:
flowlab.ops.sparse_segment_ops), with TensorFlow's checks and messages.

The forward kernels walk the runs of equal segment ids in order, as TensorFlow's
SparseSegmentReductionOpBase does: a run whose id is below the previous one is
"not increasing", an id outside [0, output rows) is reported with TensorFlow's
hint about sorting, and each index of a run is bounds-checked before its row is
read.  An empty segment is 0; mean divides by the run length, sqrtn by its root.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.registry import CPU, kernel
from flowlab.kernels.sparse_common import bad as bad_
from flowlab.ops import sparse_segment_ops  # noqa: F401  (declares the ops)


def _scales(kind: str, counts: np.ndarray, dtype: Any) -> np.ndarray | None:
    """Per segment: 1/n for mean, 1/sqrt(n) for sqrtn (in the data's dtype), None for sum."""
    n = np.maximum(counts, 1).astype(np.float64)
    if kind == "mean":
        return (1.0 / n).astype(dtype)
    if kind == "sqrtn":
        return (1.0 / np.sqrt(n)).astype(dtype)
    return None


def _check_runs(ind: np.ndarray, seg: np.ndarray, rows: int, n_data: int) -> None:
    """TensorFlow's per-run checks, reporting the first failing run: order, id range,
    then its indices' bounds."""
    starts = np.concatenate([[0], np.flatnonzero(seg[1:] != seg[:-1]) + 1])
    ids = seg[starts]
    bad = (ids < 0) | (ids >= rows)
    bad[1:] |= ids[1:] < ids[:-1]
    bad_pos = np.flatnonzero((ind < 0) | (ind >= n_data))
    run_of_pos = np.searchsorted(starts, bad_pos, side="right") - 1
    candidates = np.flatnonzero(bad).tolist() + run_of_pos[:1].tolist()
    if not candidates:
        return
    k = min(candidates)
    sid = int(ids[k])
    if k and sid < ids[k - 1]:
        raise bad_("segment ids are not increasing")
    if not 0 <= sid < rows:
        raise bad_(f"Segment id {sid} out of range [0, {rows}), possibly because "
                   "'segment_ids' input is not sorted.")
    i = int(bad_pos[run_of_pos == k][0])
    raise bad_(f"Bad: indices[{i}] == {ind[i]} out of range [0, {n_data})")


def _forward(kind: str, with_num: bool) -> Any:
    def run(ctx: Any, data: Any, indices: Any, segment_ids: Any, *num: Any) -> Any:
        if with_num and np.ndim(num[0]) != 0:
            raise bad_("num_segments should be a scalar, not shape " + str(list(np.shape(num[0]))))
        if np.ndim(indices) != 1:
            raise bad_("indices should be a vector.")
        if np.ndim(segment_ids) != 1:
            raise bad_("segment_ids should be a vector.")
        ind, seg = np.asarray(indices).astype(np.int64), np.asarray(segment_ids).astype(np.int64)
        if ind.size != seg.size:
            raise bad_("segment_ids and indices should have same size.")
        last = int(seg[-1]) if seg.size else -1
        rows = int(num[0]) if with_num else last + 1
        if with_num and last >= rows:
            raise bad_("segment ids must be < num_segments")
        out = np.zeros((max(rows, 0),) + data.shape[1:], dtype=data.dtype)
        if seg.size:
            _check_runs(ind, seg, rows, data.shape[0])
            np.add.at(out, seg, data[ind])  # row by row, in input order
            s = _scales(kind, np.bincount(seg, minlength=rows), data.dtype)
            if s is not None:
                out = out * s.reshape((-1,) + (1,) * (data.ndim - 1))
        return out
    return run


def _grad_rows(kind: str, grad: Any, indices: Any, segment_ids: Any, dim0: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per input position: the destination row and the scaled gradient row."""
    if np.ndim(indices) != 1:
        raise bad_("indices should be a vector.")
    if np.ndim(segment_ids) != 1:
        raise bad_("segment_ids should be a vector.")
    ind, seg = np.asarray(indices).astype(np.int64), np.asarray(segment_ids).astype(np.int64)
    if ind.size != seg.size:
        raise bad_("segment_ids and indices should have same size.")
    n0, g0 = int(dim0), grad.shape[0]
    wrong = np.flatnonzero((seg < 0) | (seg >= g0) | (ind < 0) | (ind >= n0))
    if wrong.size:
        i = int(wrong[0])
        if not 0 <= seg[i] < g0:
            raise bad_(f"Segment id {seg[i]} out of range [0, {g0}).")
        raise bad_(f"Index {ind[i]} out of range [0, {n0}).")
    rows = grad[seg]
    s = _scales(kind, np.bincount(seg, minlength=g0), grad.dtype)
    if s is not None:
        rows = rows * s[seg].reshape((-1,) + (1,) * (grad.ndim - 1))
    return ind, rows


def _grad(kind: str) -> Any:
    def run(ctx: Any, grad: Any, indices: Any, segment_ids: Any, dim0: Any) -> Any:
        ind, rows = _grad_rows(kind, grad, indices, segment_ids, dim0)
        out = np.zeros((int(dim0),) + grad.shape[1:], grad.dtype)
        np.add.at(out, ind, rows)
        return out
    return run


def _grad_v2(kind: str) -> Any:
    def run(ctx: Any, grad: Any, indices: Any, segment_ids: Any, dim0: Any) -> Any:
        ind, rows = _grad_rows(kind, grad, indices, segment_ids, dim0)
        unique, where = np.unique(ind, return_inverse=True)
        out = np.zeros((unique.size,) + grad.shape[1:], grad.dtype)
        np.add.at(out, where.reshape(-1), rows)
        return out, unique.astype(np.asarray(indices).dtype)
    return run


for _op, _kind in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn")):
    kernel(f"SparseSegment{_op}", devices=CPU)(_forward(_kind, False))
    kernel(f"SparseSegment{_op}WithNumSegments", devices=CPU)(_forward(_kind, True))
    kernel(f"SparseSegment{_op}Grad", devices=CPU)(_grad(_kind))
    kernel(f"SparseSegment{_op}GradV2", devices=CPU)(_grad_v2(_kind))
