"""Kernels of UniqueWithCounts and ListDiff (flowlab.ops.unique_ops), on the host."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad, _host, _np_type, unique
from flowlab.kernels.registry import kernel


@kernel("UniqueWithCounts")
def unique_with_counts(ctx: Any, x: Any) -> Any:
    a = _host(x)
    if a.ndim != 1:
        raise _bad("unique expects a 1D vector.")
    y, idx = unique(ctx, x)
    counts = np.bincount(_host(idx).astype(np.int64), minlength=int(y.shape[0]))
    return [y, idx, ctx.xp.asarray(counts.astype(_np_type(ctx, "out_idx")))]


@kernel("ListDiff")
def list_diff(ctx: Any, x: Any, y: Any) -> Any:
    a, b = _host(x), _host(y)
    if a.ndim != 1:
        raise _bad("x should be a 1D vector.")
    if b.ndim != 1:
        raise _bad("y should be a 1D vector.")
    drop = set(b.tolist())
    where = np.array([i for i, v in enumerate(a.tolist()) if v not in drop], dtype=np.int64)
    return [ctx.xp.asarray(a[where]), ctx.xp.asarray(where.astype(_np_type(ctx, "out_idx")))]
