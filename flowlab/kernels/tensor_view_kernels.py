"""Kernels of EnsureShape and Bitcast (flowlab.ops.tensor_views)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor_shape import TensorShape
from flowlab.kernels.array_kernels import _bad
from flowlab.kernels.registry import kernel


@kernel("EnsureShape")
def ensure_shape(ctx: Any, input: Any) -> Any:  # noqa: A002
    want = TensorShape(ctx.attrs["shape"])
    if not want.is_compatible_with(TensorShape(list(input.shape))):
        dims = "[" + ",".join(str(d) for d in input.shape) + "]"
        want_s = "[" + ",".join("?" if d is None else str(d) for d in want.as_list()) + "]" \
            if want.ndims is not None else "<unknown>"
        t = ctx.op.inputs[0]
        src = t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"  # the NodeDef's input
        raise _bad(f"Shape of tensor {src} {dims} is not compatible with expected shape {want_s}.")
    return input


@kernel("Bitcast")
def bitcast(ctx: Any, input: Any) -> Any:  # noqa: A002
    dst = np.dtype(ctx.attrs["type"].as_numpy_dtype)
    a = ctx.xp.asarray(input)
    a = a if a.flags.c_contiguous else a.copy()  # ascontiguousarray would make a scalar 1-D
    src = a.dtype.itemsize
    if src == dst.itemsize:
        return a.view(dst)
    if src > dst.itemsize:
        return a.reshape(a.shape + (1,)).view(dst).reshape(a.shape + (src // dst.itemsize,))
    return a.view(dst).reshape(a.shape[:-1])
