"""CPU kernels of the segment reductions (ops in `flowlab.ops.segment_ops`).

Each kernel validates the ids as TensorFlow does (same messages), then reduces with a
NumPy `ufunc.at` into an array filled with the reduction's identity, which adds rows in
input order as TensorFlow's CPU kernels do.  Empty segments: 0 for the sorted family
(sum, mean, max, min; 1 for prod), the dtype's lowest / highest value for unsorted max / min, 1 for
unsorted prod.  On a GPU the values make a round trip through the host (no CuPy
scatter-reduce here); the ids are validated on the host in any case.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad, _host
from flowlab.kernels.registry import kernel

_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _limits(dtype: np.dtype) -> tuple[Any, Any]:
    info = np.finfo(dtype) if dtype.kind in "fc" else np.iinfo(dtype)
    return info.min, info.max


def _reduce(kind: str, data: np.ndarray, ids: np.ndarray, rows: int) -> np.ndarray:
    """`rows` segments of the rows of `data` (ids already valid, 1-D, non-negative)."""
    if kind == "max":
        fill = _limits(data.dtype)[0]
    elif kind == "min":
        fill = _limits(data.dtype)[1]
    else:
        fill = 1 if kind == "prod" else 0
    out = np.full((rows,) + data.shape[1:], fill, dtype=data.dtype)
    with np.errstate(all="ignore"):
        _UFUNC[kind].at(out, ids, data)
    return out


def _sorted(kind: str) -> Any:
    def run(ctx: Any, data: Any, segment_ids: Any) -> Any:
        data = _host(data)
        ids = _host(segment_ids).astype(np.int64, copy=False)
        if ids.ndim != 1 or data.ndim < 1:
            raise _bad("segment_ids should be a vector.")
        if ids.shape[0] != data.shape[0]:
            raise _bad("segment_ids should be the same size as dimension 0 of input.")
        rows = int(ids[-1]) + 1 if ids.size else 0
        if ids.size:
            if np.any(np.diff(ids) < 0):
                raise _bad("segment ids are not increasing")
            if ids[0] < 0:
                raise _bad(f"Segment id {int(ids[0])} out of range [0, {rows}), possibly because "
                           "'segment_ids' input is not sorted.")
        red = "sum" if kind == "mean" else kind
        out = _reduce(red, data, ids, rows)
        if kind == "mean":
            counts = np.bincount(ids, minlength=rows).reshape((rows,) + (1,) * (data.ndim - 1))
            with np.errstate(all="ignore"):
                out = (out / np.maximum(counts, 1)).astype(data.dtype)
        elif kind in ("max", "min") and rows:
            empty = np.bincount(ids, minlength=rows) == 0
            out[empty] = 0
        return ctx.xp.asarray(out)
    return run


def _unsorted(kind: str) -> Any:
    def run(ctx: Any, data: Any, segment_ids: Any, num_segments: Any) -> Any:
        data = _host(data)
        ids = _host(segment_ids).astype(np.int64, copy=False)
        rows = int(_host(num_segments))
        if data.shape[:ids.ndim] != ids.shape:
            raise _bad(f"data.shape = {list(data.shape)} does not start with segment_ids.shape = "
                       f"{list(ids.shape)}")
        if rows < 0:
            raise _bad(f"Input num_segments == {rows} must not be negative.")
        flat_ids = ids.reshape(-1)
        flat = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
        too_big = np.flatnonzero(flat_ids >= rows)
        if too_big.size:
            i = int(too_big[0])
            raise _bad(f"segment_ids[{i}] = {int(flat_ids[i])} is out of range [0, {rows})")
        keep = flat_ids >= 0
        return ctx.xp.asarray(_reduce(kind, flat[keep], flat_ids[keep], rows))
    return run


for _op, _kind in (("SegmentSum", "sum"), ("SegmentMean", "mean"), ("SegmentMax", "max"), ("SegmentMin", "min"),
                   ("SegmentProd", "prod")):
    kernel(_op)(_sorted(_kind))
for _op, _kind in (("UnsortedSegmentSum", "sum"), ("UnsortedSegmentMax", "max"),
                   ("UnsortedSegmentMin", "min"), ("UnsortedSegmentProd", "prod")):
    kernel(_op, host_memory=("num_segments",))(_unsorted(_kind))
