"""Kernels of DenseToDenseSetOperation and SetSize (TensorFlow's set_kernels), on CPU.

A dense [..., n] tensor holds one set per leading index: the distinct values of its
last dimension.  The set operation gives, per set, the sorted result as a sparse
tensor (indices [group..., position], values, shape [leading..., largest result]);
SetSize counts the distinct values stored per set of a sparse tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_OPS = {
    "intersection": lambda a, b: a & b,
    "union": lambda a, b: a | b,
    "a-b": lambda a, b: a - b,
    "b-a": lambda a, b: b - a,
}


@kernel("DenseToDenseSetOperation", devices=CPU)
def dense_to_dense_set_operation(ctx: Any, set1: Any, set2: Any) -> Any:
    op = ctx.attrs["set_operation"]
    if op not in _OPS:
        raise errors.InvalidArgumentError(None, None, f"Invalid set_operation {op}.")
    a, b = np.asarray(set1), np.asarray(set2)
    if a.ndim < 2 or b.ndim < 2:
        raise errors.InvalidArgumentError(None, None, f"Invalid rank {min(a.ndim, b.ndim)}.")
    if a.shape[:-1] != b.shape[:-1]:
        raise errors.InvalidArgumentError(
            None, None, f"Shape mismatch: Expected {list(a.shape[:-1])}, got {list(b.shape[:-1])}.")
    lead = a.shape[:-1]
    fa, fb = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    results = [sorted(_OPS[op](set(x.tolist()), set(y.tolist()))) for x, y in zip(fa, fb)]
    width = max((len(r) for r in results), default=0)
    indices, values = [], []
    for g, r in enumerate(results):
        coords = list(np.unravel_index(g, lead)) if lead else []
        for j, v in enumerate(r):
            indices.append([*map(int, coords), j])
            values.append(v)
    idx = np.array(indices, dtype=np.int64).reshape(-1, len(lead) + 1)
    vals = np.array(values, dtype=a.dtype)
    return idx, vals, np.array([*lead, width], dtype=np.int64)


@kernel("SetSize", devices=CPU)
def set_size(ctx: Any, indices: Any, values: Any, shape: Any) -> Any:
    shape = np.asarray(shape, dtype=np.int64)
    if shape.shape[0] < 2:
        raise errors.InvalidArgumentError(None, None, f"Invalid rank {shape.shape[0]}.")
    lead = tuple(int(d) for d in shape[:-1])
    idx = np.asarray(indices, dtype=np.int64).reshape(-1, shape.shape[0])
    groups: dict[tuple[int, ...], set[Any]] = {}
    for row, v in zip(idx.tolist(), np.asarray(values).tolist()):
        groups.setdefault(tuple(row[:-1]), set()).add(v)
    out = np.zeros(lead, dtype=np.int32)
    for g, s in groups.items():
        out[g] = len(s)
    return out
