"""What the sparse kernels share: TensorFlow's SparseTensor checks (ranks, counts,
bounds) with its messages, row-major ordering of index rows, and group-by.

Index rows are compared as TensorFlow's `DimComparator` does: lexicographically,
dimension 0 first.  Sorting is stable, so equal rows keep their input order (the
order TensorFlow's `std::stable_sort`-based Reorder keeps).  Everything runs on the
host: these are CPU kernels, as TensorFlow's sparse kernels mostly are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors


def bad(message: str) -> errors.OpError:
    return errors.InvalidArgumentError(None, None, message)


def dims(shape: Any) -> str:
    """A shape as TensorFlow prints it in kernel messages: `[2,3]`."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def check_sparse(indices: np.ndarray, values: np.ndarray, shape: np.ndarray) -> None:
    """TensorFlow's `SparseTensor::Create` checks (ranks, then counts)."""
    if indices.ndim != 2:
        raise bad(f"Sparse indices must be rank 2 but is rank {indices.ndim}")
    if values.ndim != 1:
        raise bad(f"Sparse values must be rank 1 but is rank {values.ndim}")
    if shape.ndim != 1:
        raise bad(f"Sparse shape must be rank 1 but is rank {shape.ndim}")
    if indices.shape[0] != values.shape[0]:
        raise bad(f"Number of elements in indices ({indices.shape[0]}) and values "
                  f"({values.shape[0]}) do not match")
    if indices.shape[1] != shape.shape[0]:
        raise bad(f"Index rank ({indices.shape[1]}) and shape rank ({shape.shape[0]}) do not match")


def order(indices: np.ndarray, by: list[int] | None = None) -> np.ndarray:
    """The stable permutation sorting the index rows row-major over the columns `by`
    (all, in order, when None)."""
    cols = list(range(indices.shape[1])) if by is None else by
    if not cols or indices.shape[0] == 0:
        return np.arange(indices.shape[0])
    return np.lexsort(tuple(indices[:, c] for c in reversed(cols)))


def compare(a: np.ndarray, b: np.ndarray) -> int:
    """-1, 0 or 1: row `a` before, equal to or after row `b` (DimComparator::cmp)."""
    for x, y in zip(a.tolist(), b.tolist()):
        if x != y:
            return -1 if x < y else 1
    return 0


def group_starts(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal consecutive rows of `keys` ([n, k]) starts."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    if keys.shape[1] == 0:
        return np.zeros(1, np.int64)
    return np.concatenate([[0], np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1]).astype(np.int64)


def first_out_of_bounds(indices: np.ndarray, shape: np.ndarray) -> int | None:
    """The first row with a coordinate outside [0, shape), or None."""
    if indices.size == 0:
        return None
    bad_rows = np.flatnonzero(np.any((indices < 0) | (indices >= shape[None, :]), axis=1))
    return int(bad_rows[0]) if bad_rows.size else None
