"""The Einsum kernel (op: flowlab.ops.einsum_ops): `einsum` of the array module, with
NumPy's complaints about an equation as InvalidArgumentError naming it."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.errors import InvalidArgumentError
from flowlab.kernels.registry import kernel
from flowlab.ops import einsum_ops  # noqa: F401  (declares Einsum)


@kernel("Einsum")
def _einsum_kernel(ctx: Any, *inputs: Any) -> Any:
    eq = ctx.attrs["equation"]
    try:
        with np.errstate(all="ignore"):
            r = ctx.xp.einsum(eq, *inputs)
    except ValueError as e:
        raise InvalidArgumentError(None, None, f"Einsum {eq!r}: {e}") from None
    r = ctx.xp.asarray(r).astype(inputs[0].dtype, copy=False)
    return r[()] if r.ndim == 0 else r
