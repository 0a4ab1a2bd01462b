"""Kernel of BroadcastArgs (flowlab.ops.broadcast_shapes), on the host."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad, _host
from flowlab.kernels.registry import kernel
from flowlab.ops.broadcast_shapes import broadcast_shape_values


@kernel("BroadcastArgs", host_memory=("s0", "s1", "r0"))
def broadcast_args(ctx: Any, s0: Any, s1: Any) -> Any:
    a, b = _host(s0), _host(s1)
    try:
        return np.array(broadcast_shape_values(a.tolist(), b.tolist()), a.dtype)
    except ValueError as e:
        raise _bad(str(e)) from None
