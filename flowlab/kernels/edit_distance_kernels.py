"""Kernels of EditDistance and Fingerprint (flowlab.ops.edit_distance_ops), following
TensorFlow's edit_distance_op.cc and fingerprint_op.cc."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.farmhash import fingerprint64
from flowlab.kernels.registry import CPU, kernel


def _levenshtein(a: list[Any], b: list[Any]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def _groups(indices: np.ndarray, values: np.ndarray, what: str) -> dict[tuple[int, ...], list[Any]]:
    out: dict[tuple[int, ...], list[Any]] = {}
    order = [tuple(int(v) for v in row) for row in indices]
    if order != sorted(order):
        raise errors.InvalidArgumentError(
            None, None, f"{what} indices are not in lexicographic order")
    for row, v in zip(order, values):
        out.setdefault(row[:-1], []).append(v.item() if hasattr(v, "item") else v)
    return out


@kernel("EditDistance", devices=CPU)
def edit_distance(ctx: Any, h_idx: Any, h_val: Any, h_shape: Any, t_idx: Any, t_val: Any,
                  t_shape: Any) -> Any:
    h_idx, t_idx = np.asarray(h_idx).reshape(-1, np.size(h_shape)), np.asarray(t_idx)
    h_shape, t_shape = np.asarray(h_shape), np.asarray(t_shape)
    if h_shape.size != t_shape.size:
        raise errors.InvalidArgumentError(
            None, None, "hypothesis and truth must have the same rank: "
            f"{h_shape.size} vs. {t_shape.size}")
    if h_shape.size < 2:
        raise errors.InvalidArgumentError(
            None, None, f"Input SparseTensors must have rank at least 2, but truth_shape rank "
            f"is: {t_shape.size}")
    t_idx = t_idx.reshape(-1, t_shape.size)
    out_shape = tuple(int(max(a, b)) for a, b in zip(h_shape[:-1], t_shape[:-1]))
    out = np.zeros(out_shape, np.float32)
    hyp = _groups(h_idx, np.asarray(h_val), "hypothesis")
    truth = _groups(t_idx, np.asarray(t_val), "truth")
    normalize = ctx.attrs["normalize"]
    with np.errstate(divide="ignore", invalid="ignore"):
        for cell in set(hyp) | set(truth):
            h, t = hyp.get(cell, []), truth.get(cell, [])
            d = np.float32(_levenshtein(t, h))
            out[cell] = d / np.float32(len(t)) if normalize else d
    return out


@kernel("Fingerprint", devices=CPU)
def fingerprint(ctx: Any, data: Any, method: Any) -> Any:
    m = method.decode() if isinstance(method, bytes) else str(np.asarray(method).item())
    if isinstance(m, bytes):
        m = m.decode()
    if m != "farmhash64":
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported fingerprint method is used: {m}")
    x = np.asarray(data)
    if x.ndim < 1:
        raise errors.InvalidArgumentError(
            None, None, f"`data` should have at least one dimension. Got: {list(x.shape)}")
    dim0 = x.shape[0]
    rows = x.reshape(dim0, int(np.prod(x.shape[1:], dtype=np.int64)))

    def fp(b: bytes) -> bytes:
        return fingerprint64(b).to_bytes(8, "little")

    if x.dtype == object:
        if rows.shape[1] > 1:
            out = [fp(b"".join(fp(s) for s in row)) for row in rows]
        else:
            out = [fp(row[0]) if len(row) else fp(b"") for row in rows]
    else:
        raw = np.ascontiguousarray(rows).view(np.uint8).reshape(dim0, rows.shape[1] * x.itemsize)
        out = [fp(row.tobytes()) for row in raw]
    return np.frombuffer(b"".join(out), np.uint8).reshape(dim0, 8).copy()
