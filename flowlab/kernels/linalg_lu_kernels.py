"""Kernel of Lu (flowlab.ops.linalg_lu): Doolittle elimination with partial pivoting
(the first row of largest magnitude, as LAPACK's getrf and Eigen's PartialPivLU), per
matrix of the batch, on the host."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel


def _lu_one(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = a.copy()
    n = a.shape[0]
    perm = np.arange(n)
    for k in range(n):
        pivot = k + int(np.argmax(np.abs(a[k:, k])))
        if a[pivot, k] == 0:
            raise errors.InvalidArgumentError(None, None, "Input is not invertible.")
        if pivot != k:
            a[[k, pivot]] = a[[pivot, k]]
            perm[[k, pivot]] = perm[[pivot, k]]
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a, perm


@kernel("Lu", devices=CPU)
def lu(ctx: Any, input: Any) -> Any:  # noqa: A002
    x = np.asarray(input)
    if x.shape[-1] != x.shape[-2]:
        raise errors.InvalidArgumentError(None, None, f"Input matrices must be squares, got{x.shape[-2]} != {x.shape[-1]}")
    n = x.shape[-1]
    flat = x.reshape(-1, n, n)
    lus = np.empty_like(flat)
    perms = np.empty(flat.shape[:2], dtype=ctx.attrs["output_idx_type"].as_numpy_dtype)
    for i, m in enumerate(flat):
        lus[i], perms[i] = _lu_one(m)
    return [lus.reshape(x.shape), perms.reshape(x.shape[:-1])]
