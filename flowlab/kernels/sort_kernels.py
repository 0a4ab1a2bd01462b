"""Kernels of `flowlab.ops.sort_ops`: Roll, DenseBincount, LowerBound / UpperBound
and HistogramFixedWidth, over `ctx.xp` (all have cupy equivalents: roll, bincount-
by-scatter, searchsorted, clip/floor), with TensorFlow's errors for bad input."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.errors import InvalidArgumentError
from flowlab.kernels.registry import kernel


@kernel("Roll", host_memory=("shift", "axis"))
def roll(ctx: Any, x: Any, shift: Any, axis: Any) -> Any:
    shift = np.asarray(shift).reshape(-1).tolist()
    axis = np.asarray(axis).reshape(-1).tolist()
    if len(shift) != len(axis):
        raise InvalidArgumentError(None, None, "shift and axis must have the same size")
    for a in axis:
        if a < -x.ndim or a >= x.ndim:
            raise InvalidArgumentError(None, None, f"axis {a} is out of range")
    if not axis or x.size == 0:
        return x
    return ctx.xp.roll(x, shift, axis)


@kernel("DenseBincount", host_memory=("size",))
def dense_bincount(ctx: Any, arr: Any, size: Any, weights: Any) -> Any:
    xp = ctx.xp
    size = int(size)
    if size < 0:
        raise InvalidArgumentError(None, None, f"size ({size}) must be non-negative")
    if arr.ndim > 2:
        raise InvalidArgumentError(None, None, "Shape must be at most rank 2 but is rank " + str(arr.ndim))
    if arr.size and int(arr.min()) < 0:
        raise InvalidArgumentError(None, None, "Input arr must be non-negative!")
    if weights.size and weights.shape != arr.shape:
        raise InvalidArgumentError(None, None, f"Weights and input must have the same shape. Weight shape: "
                                   f"{list(weights.shape)}; Input shape: {list(arr.shape)}")
    dtype = weights.dtype
    rows = arr.reshape(-1, arr.shape[-1]) if arr.ndim == 2 else arr.reshape(1, -1)
    w = weights.reshape(rows.shape) if weights.size else None
    out = xp.zeros((rows.shape[0], size), dtype=dtype)
    keep = rows < size
    r = xp.broadcast_to(xp.arange(rows.shape[0])[:, None], rows.shape)[keep]
    c = rows[keep]
    if ctx.attrs["binary_output"]:
        out[r, c] = 1
    else:
        xp.add.at(out, (r, c), w[keep] if w is not None else xp.ones((), dtype))
    return out if arr.ndim == 2 else out[0]


def _bound(side: str) -> Any:
    def run(ctx: Any, sorted_inputs: Any, values: Any) -> Any:
        xp = ctx.xp
        if sorted_inputs.shape[0] != values.shape[0]:
            raise InvalidArgumentError(None, None, "Leading dim_size of both tensors must match.")
        out = xp.zeros(values.shape, dtype=ctx.attrs["out_type"].as_numpy_dtype)
        for i in range(values.shape[0]):
            out[i] = xp.searchsorted(sorted_inputs[i], values[i], side=side)
        return out
    return run


kernel("LowerBound")(_bound("left"))
kernel("UpperBound")(_bound("right"))


@kernel("HistogramFixedWidth", host_memory=("nbins",))
def histogram_fixed_width(ctx: Any, values: Any, value_range: Any, nbins: Any) -> Any:
    xp = ctx.xp
    nbins = int(nbins)
    if nbins <= 0:
        raise InvalidArgumentError(None, None, f"nbins should be a positive number, but got '{nbins}'")
    lo, hi = value_range.reshape(-1)[0], value_range.reshape(-1)[1]
    if not lo < hi:
        raise InvalidArgumentError(None, None, f"value_range should satisfy value_range[0] < value_range[1], but "
                                   f"got '[{lo}, {hi}]'")
    step = (float(hi) - float(lo)) / nbins
    with np.errstate(all="ignore"):
        idx = xp.minimum((xp.maximum(values.reshape(-1), lo) - lo).astype(np.float64) / step, nbins - 1)
    idx = idx.astype(np.int32)
    out = xp.bincount(idx, minlength=nbins) if idx.size else xp.zeros(nbins, np.int64)
    return out.astype(ctx.attrs["dtype"].as_numpy_dtype)
