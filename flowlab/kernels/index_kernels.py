"""Kernel of UnravelIndex (flowlab.ops.index_ops), on the host, with TensorFlow's checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad, _host
from flowlab.kernels.registry import kernel


@kernel("UnravelIndex")
def unravel_index(ctx: Any, indices: Any, dims: Any) -> Any:
    i, d = _host(indices), _host(dims)
    zero = np.flatnonzero(d == 0)
    if zero.size:
        raise _bad(f"Input dims cannot contain a dim of zero, but dims contains zero at index {int(zero[0])}")
    total = int(np.prod(d.astype(np.int64)))
    if np.any(i >= total):
        raise _bad("index is out of bound as with dims")
    # TensorFlow's kernel: (index / stride) % dim with C++'s truncating division and
    # remainder (which defines its result for negative indices too).
    strides = np.cumprod(np.concatenate([[1], d[::-1][:-1]]))[::-1].astype(i.dtype)
    col = i.reshape(1, -1)
    q = np.sign(col) * (np.abs(col) // strides[:, None])
    out = np.fmod(q, d[:, None]).astype(i.dtype)
    return ctx.xp.asarray(out.reshape(d.shape) if i.ndim == 0 else out)
