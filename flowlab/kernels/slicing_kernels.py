"""Kernels of the indexing ops (flowlab.ops.slicing): Slice, StridedSlice(Grad),
GatherV2, GatherNd, ScatterNd, DynamicPartition, DynamicStitch.

Index arrays are validated on the host (`_host`), with TensorFlow's messages; a
StridedSlice spec is read by `strided_slice_plan`, the same function the shape
function uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad, _dims, _host, _ints
from flowlab.kernels.registry import kernel
from flowlab.kernels.state_kernels import scatter_at
from flowlab.ops.slicing import MASKS, strided_slice_plan


# --- slicing ---------------------------------------------------------------------------
@kernel("Slice", host_memory=("begin", "size"))
def slice_(ctx: Any, x: Any, begin: Any, size: Any) -> Any:
    s = np.shape(x)
    b, sz = _ints(begin), _ints(size)
    if len(b) != len(s) or len(sz) != len(s):
        raise _bad(f"Expected begin and size arguments to be 1-D tensors of size {len(s)}, but got "
                   f"shapes [{len(b)}] and [{len(sz)}] instead.")
    index = []
    for i, d in enumerate(s):
        if not 0 <= b[i] <= d:
            raise _bad(f"Expected begin[{i}] in [0, {d}], but got {b[i]}")
        n = d - b[i] if sz[i] == -1 else sz[i]
        if not 0 <= n <= d - b[i]:
            raise _bad(f"Expected size[{i}] in [0, {d - b[i]}], but got {sz[i]}")
        index.append(slice(b[i], b[i] + n))
    return x[tuple(index)] if index else x


def _strided_index(ctx: Any, s: tuple[int, ...], begin: Any, end: Any, strides: Any) -> tuple[Any, ...]:
    """The NumPy index of a StridedSlice spec applied to shape `s` (validated)."""
    b, e, st = _ints(begin), _ints(end), _ints(strides)
    if not len(b) == len(e) == len(st):
        raise _bad("Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                   f"[{len(b)}], [{len(e)}], and [{len(st)}] instead.")
    masks = {m: ctx.attrs[m] for m in MASKS}
    try:
        plan = strided_slice_plan(len(s), len(b), masks)
    except ValueError as err:
        raise _bad(str(err)) from None
    index: list[Any] = []
    for kind, i, dim in plan:
        if kind == "full":
            index.append(slice(None))
        elif kind == "new":
            index.append(None)
        elif kind == "shrink":
            if not -s[dim] <= b[i] < s[dim]:
                raise _bad(f"slice index {b[i]} of dimension {dim} out of bounds.")
            index.append(b[i])
        else:
            if st[i] == 0:
                raise _bad(f"strides[{i}] must be non-zero")
            index.append(slice(None if masks["begin_mask"] >> i & 1 else b[i],
                               None if masks["end_mask"] >> i & 1 else e[i], st[i]))
    return tuple(index)


@kernel("StridedSlice", host_memory=("begin", "end", "strides"))
def strided_slice(ctx: Any, x: Any, begin: Any, end: Any, strides: Any) -> Any:
    return ctx.xp.asarray(x)[_strided_index(ctx, np.shape(x), begin, end, strides)]


@kernel("StridedSliceGrad", host_memory=("shape", "begin", "end", "strides"))
def strided_slice_grad(ctx: Any, shape: Any, begin: Any, end: Any, strides: Any, dy: Any) -> Any:
    xp = ctx.xp
    s = tuple(_ints(shape))
    index = _strided_index(ctx, s, begin, end, strides)
    dy = xp.asarray(dy)
    want = np.empty(s, dtype=np.bool_)[index].shape if all(s) else np.zeros(s)[index].shape
    if dy.shape != want:
        raise _bad(f"shape of dy was {_dims(dy.shape)} instead of {_dims(want)}")
    out = xp.zeros(s, dtype=dy.dtype)
    out[index] = dy
    return out



def _bad_index_position(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.argwhere(bad)[0])


@kernel("GatherV2", host_memory=("axis",))
def gather_v2(ctx: Any, params: Any, indices: Any, axis: Any) -> Any:
    xp = ctx.xp
    p = xp.asarray(params)
    idx = _host(indices)
    r = p.ndim
    a = int(axis)
    if not -r <= a < r:
        raise _bad(f"Expected axis in the range [{-r}, {r}), but got {a}")
    a %= r
    bd = ctx.attrs["batch_dims"]
    if bd < 0:
        bd += idx.ndim
    limit = p.shape[a]
    bad = (idx < 0) | (idx >= limit)
    if bad.any():
        pos = _bad_index_position(bad)
        raise _bad(f"indices[{','.join(str(v) for v in pos)}] = {idx[pos]} is not in [0, {limit})")
    if bd == 0:
        return xp.take(p, xp.asarray(idx), axis=a)
    lead = p.shape[:bd]
    nb = int(np.prod(lead, dtype=np.int64))
    pf = p.reshape((nb,) + p.shape[bd:])
    ix = idx.reshape((nb,) + idx.shape[bd:])
    parts = [xp.take(pf[i], xp.asarray(ix[i]), axis=a - bd) for i in range(nb)]
    out_tail = p.shape[bd:a] + idx.shape[bd:] + p.shape[a + 1:]
    if not parts:
        return xp.zeros(lead + out_tail, dtype=p.dtype)
    return xp.stack(parts).reshape(lead + out_tail)


@kernel("GatherNd")
def gather_nd(ctx: Any, params: Any, indices: Any) -> Any:
    p = ctx.xp.asarray(params)
    idx = _host(indices)
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    limits = np.array(p.shape[:k])
    bad = ((flat < 0) | (flat >= limits)).any(axis=1)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        pos = ",".join(str(int(v)) for v in np.unravel_index(i, idx.shape[:-1]))
        raise _bad(f"indices[{pos}] = "
                   f"[{', '.join(str(int(v)) for v in flat[i])}] does not index into param shape "
                   f"{_dims(p.shape)}, node name: {ctx.name}")
    out = p[tuple(ctx.xp.asarray(c) for c in flat.T)] if k else ctx.xp.broadcast_to(p, (flat.shape[0],) + p.shape)
    return out.reshape(idx.shape[:-1] + p.shape[k:])


@kernel("ScatterNd", host_memory=("shape",))
def scatter_nd(ctx: Any, indices: Any, updates: Any, shape: Any) -> Any:
    xp = ctx.xp
    out_shape = tuple(_ints(shape))
    idx = _host(indices)
    u = xp.asarray(updates)
    k = idx.shape[-1] if idx.ndim else 0
    flat = idx.reshape(-1, k)
    want = idx.shape[:-1] + out_shape[k:]
    if u.shape != want:
        raise _bad(f"Dimensions [0,{idx.ndim - 1}) of indices[shape={_dims(idx.shape)}] must match "
                   f"dimensions [0,{u.ndim - len(out_shape) + k}) of updates[shape={_dims(u.shape)}]")
    limits = np.array(out_shape[:k])
    bad = ((flat < 0) | (flat >= limits)).any(axis=1)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise _bad(f"indices[{i}] = [{', '.join(str(int(v)) for v in flat[i])}] does not index into "
                   f"shape {_dims(out_shape)}")
    out = xp.zeros(out_shape, dtype=u.dtype)
    where = tuple(xp.asarray(c) for c in flat.T)  # validated on the host, used on the device
    # Repeated indices sum (bools: any, i.e. a running maximum).  scatter_at picks what
    # the array module has: NumPy's ufunc.at, CuPy's scatter, or rounds of distinct indices.
    how = "max" if u.dtype == np.bool_ else "add"
    scatter_at(xp, getattr(ctx.device, "xpx", None), how, out, where,
               u.reshape((flat.shape[0],) + out_shape[k:]))
    return out


@kernel("DynamicPartition")
def dynamic_partition(ctx: Any, data: Any, partitions: Any) -> Any:
    d = ctx.xp.asarray(data)
    p = _host(partitions)
    n = ctx.attrs["num_partitions"]
    if d.shape[: p.ndim] != p.shape:
        raise _bad(f"data.shape must start with partitions.shape, got data.shape = {_dims(d.shape)}, "
                   f"partitions.shape = {_dims(p.shape)}")
    bad = (p < 0) | (p >= n)
    if bad.any():
        pos = _bad_index_position(bad)
        raise _bad(f"partitions{_dims(pos)} = {p[pos]} is not in [0, {n})")
    flat = d.reshape((-1,) + d.shape[p.ndim:])
    pf = p.reshape(-1)
    pf = ctx.xp.asarray(pf)
    return [flat[pf == i] for i in range(n)]


@kernel("DynamicStitch")
def dynamic_stitch(ctx: Any, *args: Any) -> Any:
    xp = ctx.xp
    n = len(args) // 2
    idx = [_host(i) for i in args[:n]]
    data = [xp.asarray(x) for x in args[n:]]
    inner = None
    for i, (ix, dx) in enumerate(zip(idx, data)):
        if dx.shape[: ix.ndim] != ix.shape:
            raise _bad(f"data[{i}].shape = {_dims(dx.shape)} does not start with indices[{i}].shape = "
                       f"{_dims(ix.shape)}")
        tail = dx.shape[ix.ndim:]
        if inner is None:
            inner = tail
        elif tail != inner:
            raise _bad(f"Need data[0].shape[{idx[0].ndim}:] = {_dims(inner)} to match data[{i}].shape"
                       f"[{ix.ndim}:] = {_dims(tail)}")
    first = max([int(ix.max()) for ix in idx if ix.size] or [-1]) + 1
    for i, ix in enumerate(idx):
        if ix.size and ix.min() < 0:
            raise _bad(f"indices[{i}] contains a negative index: {int(ix.min())}")
    out = xp.zeros((first,) + tuple(inner or ()), dtype=data[0].dtype)
    for ix, dx in zip(idx, data):
        out[xp.asarray(ix.reshape(-1))] = dx.reshape((-1,) + tuple(inner or ()))
    return out
