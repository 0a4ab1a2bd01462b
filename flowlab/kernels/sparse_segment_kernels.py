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
from flowlab.kernels.sparse_common import bad, groups
from flowlab.ops import sparse_segment_ops  # noqa: F401  (declares the ops)


def _scale(kind: str, n: int, dtype: Any) -> Any:
    if kind == "mean":
        return np.asarray(1.0 / n, dtype)
    if kind == "sqrtn":
        return np.asarray(1.0 / np.sqrt(n), dtype)
    return None


def _forward(kind: str, with_num: bool) -> Any:
    def run(ctx: Any, data: Any, indices: Any, segment_ids: Any, *num: Any) -> Any:
        if with_num and np.ndim(num[0]) != 0:
            raise bad("num_segments should be a scalar, not shape " + str(list(np.shape(num[0]))))
        if np.ndim(indices) != 1:
            raise bad("indices should be a vector.")
        if np.ndim(segment_ids) != 1:
            raise bad("segment_ids should be a vector.")
        ind, seg = np.asarray(indices).astype(np.int64), np.asarray(segment_ids).astype(np.int64)
        if ind.size != seg.size:
            raise bad("segment_ids and indices should have same size.")
        last = int(seg[-1]) if seg.size else -1
        rows = int(num[0]) if with_num else last + 1
        if with_num and last >= rows:
            raise bad("segment ids must be < num_segments")
        out = np.zeros((max(rows, 0),) + data.shape[1:], dtype=data.dtype)
        prev = -1
        for run_ in groups(seg.reshape(-1, 1)):
            sid = int(seg[run_[0]])
            if sid < prev:
                raise bad("segment ids are not increasing")
            if not 0 <= sid < rows:
                raise bad(f"Segment id {sid} out of range [0, {rows}), possibly because "
                          "'segment_ids' input is not sorted.")
            for i in run_.tolist():
                if not 0 <= ind[i] < data.shape[0]:
                    raise bad(f"Bad: indices[{i}] == {ind[i]} out of range [0, {data.shape[0]})")
            acc = np.zeros(data.shape[1:], data.dtype)
            for i in run_.tolist():  # added row by row, in order
                acc = acc + data[ind[i]]
            s = _scale(kind, len(run_), data.dtype)
            out[sid] = acc if s is None else acc * s
            prev = sid
        return out
    return run


def _grad_rows(kind: str, grad: Any, indices: Any, segment_ids: Any, dim0: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per input position: the destination row and the scaled gradient row."""
    if np.ndim(indices) != 1:
        raise bad("indices should be a vector.")
    if np.ndim(segment_ids) != 1:
        raise bad("segment_ids should be a vector.")
    ind, seg = np.asarray(indices).astype(np.int64), np.asarray(segment_ids).astype(np.int64)
    if ind.size != seg.size:
        raise bad("segment_ids and indices should have same size.")
    n0 = int(dim0)
    counts = np.bincount(seg, minlength=grad.shape[0]) if seg.size else np.zeros(grad.shape[0], np.int64)
    rows = np.zeros((ind.size,) + grad.shape[1:], grad.dtype)
    for i in range(ind.size):
        if not 0 <= seg[i] < grad.shape[0]:
            raise bad(f"Segment id {seg[i]} out of range [0, {grad.shape[0]}).")
        if not 0 <= ind[i] < n0:
            raise bad(f"Index {ind[i]} out of range [0, {n0}).")
        s = _scale(kind, int(counts[seg[i]]), grad.dtype)
        rows[i] = grad[seg[i]] if s is None else grad[seg[i]] * s
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
