"""Kernels of TensorScatterUpdate/Add/Sub/Max/Min (flowlab.ops.tensor_scatter_ops):
copy the tensor, check each index tuple on the host (TensorFlow's message), then apply
the updates in order with `scatter_at`, the same helper the Scatter* variable kernels use."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad, _dims, _host
from flowlab.kernels.registry import kernel
from flowlab.kernels.state_kernels import scatter_at


def _tensor_scatter(how: str) -> Any:
    def run(ctx: Any, tensor: Any, indices: Any, updates: Any) -> Any:
        xp = ctx.xp
        out = xp.array(tensor, copy=True)
        idx = _host(indices).astype(np.int64, copy=False)
        u = xp.asarray(updates)
        k = idx.shape[-1] if idx.ndim else 0
        flat = idx.reshape(-1, k)
        want = idx.shape[:-1] + out.shape[k:]
        if u.shape != want:
            raise _bad(f"Dimensions [0,{idx.ndim - 1}) of indices[shape={_dims(idx.shape)}] must match "
                       f"dimensions [0,{u.ndim - out.ndim + k}) of updates[shape={_dims(u.shape)}]")
        bad = ((flat < 0) | (flat >= np.array(out.shape[:k]))).any(axis=1)
        if bad.any():
            i = int(np.argwhere(bad)[0][0])
            raise _bad(f"indices[{i}] = [{', '.join(str(int(v)) for v in flat[i])}] does not index into "
                       f"shape {_dims(out.shape)}")
        if flat.shape[0] == 0:
            return out
        where = tuple(xp.asarray(c) for c in flat.T)
        scatter_at(xp, getattr(ctx.device, "xpx", None), how, out, where,
                   u.reshape((flat.shape[0],) + out.shape[k:]))
        return out
    return run


for _op, _how in (("TensorScatterUpdate", "update"), ("TensorScatterAdd", "add"),
                  ("TensorScatterSub", "sub"), ("TensorScatterMax", "max"), ("TensorScatterMin", "min")):
    kernel(_op)(_tensor_scatter(_how))
