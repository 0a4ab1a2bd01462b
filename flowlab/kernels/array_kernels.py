"""Kernels of the array op family (flowlab.ops.array_ops); the indexing ops' kernels are
in flowlab.kernels.slicing_kernels.

Written once over `ctx.xp`.  Shape-like outputs (Shape, Size, Rank) and index
validation use NumPy on the host.  Results may be views of inputs (Reshape, slices,
Split), as TensorFlow's kernels share buffers; no kernel writes into an input.
Bad runtime input raises InvalidArgumentError with TensorFlow's message.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel


def _bad(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _np_type(ctx: Any, attr: str) -> Any:
    return ctx.attrs[attr].as_numpy_dtype


def _dims(shape: Any) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _host(a: Any) -> np.ndarray:
    """A NumPy copy of an index array (validated on the host, as TensorFlow does)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _is_string(v: Any) -> bool:
    return isinstance(v, bytes) or (isinstance(v, np.ndarray) and v.dtype == object)


def _ints(v: Any) -> list[int]:
    return [int(x) for x in _host(v).reshape(-1)]


def _axis(a: Any, rank: int) -> int:
    a = int(a)
    return a + rank if a < 0 else a


# --- shapes ---------------------------------------------------------------------------
@kernel("Shape", host_memory=("output",))
def shape(ctx: Any, x: Any) -> Any:
    s = x.shape if type(x) is np.ndarray else np.shape(x)
    return np.array(s, dtype=_np_type(ctx, "out_type"))


@kernel("ShapeN", host_memory=("output",))
def shape_n(ctx: Any, *xs: Any) -> Any:
    dt = _np_type(ctx, "out_type")
    return [np.array(np.shape(x), dtype=dt) for x in xs]


@kernel("Size", host_memory=("output",))
def size(ctx: Any, x: Any) -> Any:
    return _np_type(ctx, "out_type")(np.size(x))


@kernel("Rank", host_memory=("output",))
def rank(ctx: Any, x: Any) -> Any:
    return np.int32(np.ndim(x))


@kernel("Reshape", host_memory=("shape",))
def reshape(ctx: Any, x: Any, shape: Any) -> Any:
    if type(shape) is np.ndarray and shape.ndim == 1 and type(x) is np.ndarray:
        # The usual case, checked with Python ints (np.prod of a list costs more
        # than the reshape): sizes >= 0 whose product is the input's, or one -1
        # among positive sizes that divide it.  Anything else takes the full path.
        dims = shape.tolist()
        if min(dims, default=0) >= 0:
            if math.prod(dims) == x.size:
                return x.reshape(dims)
        elif dims.count(-1) == 1 and min(dims) == -1:
            known = -math.prod(dims)
            if known > 0 and x.size % known == 0:
                dims[dims.index(-1)] = x.size // known
                return x.reshape(dims)
    s = np.asarray(shape)
    if s.ndim != 1:
        raise _bad(f"sizes input must be 1-D, not {_dims(s.shape)}")
    dims = _ints(s)
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise _bad(f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]}")
    for i, d in enumerate(dims):
        if d < -1:
            raise _bad(f"Size {i} must be non-negative, not {d}")
    n = int(np.size(x))
    # TensorFlow's rule: zero sizes do not count in the product, and with a zero size
    # requested, the input's zero dimensions do not count either (so [-1, 0] works).
    has_zero = 0 in dims
    product = int(np.prod([d for d in dims if d > 0], dtype=np.int64))
    if unknown:
        in_dims = np.shape(x)
        n_in = int(np.prod([d for d in in_dims if d > 0 or not has_zero], dtype=np.int64))
        in_has_zero = has_zero and 0 in in_dims
        missing = n_in // product
        if not in_has_zero and product * missing != n_in:
            raise _bad(f"Input to reshape is a tensor with {n_in} values, but the requested shape "
                       f"requires a multiple of {product}")
        dims[unknown[0]] = missing
    total = int(np.prod(dims, dtype=np.int64))
    if total != n:
        raise _bad(f"Input to reshape is a tensor with {n} values, but the requested shape has {total}")
    return ctx.xp.reshape(x, dims)


@kernel("Transpose", host_memory=("perm",))
def transpose(ctx: Any, x: Any, perm: Any) -> Any:
    p = _ints(perm)
    r = np.ndim(x)
    if len(p) != r:
        raise _bad(f"transpose expects a vector of size {r}. But input(1) is a vector of size {len(p)}")
    for d in p:
        if not 0 <= d < r:
            raise _bad(f"{d} is out of range [0 .. {r})")
    missing = sorted(set(range(r)) - set(p))
    if missing:
        raise _bad(f"{missing[0]} is missing from {{{','.join(str(d) for d in p)}}}.")
    return ctx.xp.transpose(x, p)


# --- joining and splitting -----------------------------------------------------------------
@kernel("ConcatV2", host_memory=("axis",))
def concat_v2(ctx: Any, *args: Any) -> Any:
    values, axis = args[:-1], args[-1]
    s0 = np.shape(values[0])
    r = len(s0)
    if r == 0:
        raise _bad("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
    a = int(axis)
    if not -r <= a < r:
        raise _bad(f"ConcatOp : Expected concatenating dimensions in the range [{-r}, {r}), but got {a}")
    a %= r
    for i, v in enumerate(values[1:], 1):
        s = np.shape(v)
        if len(s) != r:
            raise _bad(f"ConcatOp : Ranks of all input tensors should match: shape[0] = {_dims(s0)} "
                       f"vs. shape[{i}] = {_dims(s)}")
        for j in range(r):
            if j != a and s[j] != s0[j]:
                raise _bad(f"ConcatOp : Dimension {j} in both shapes must be equal: shape[0] = "
                           f"{_dims(s0)} vs. shape[{i}] = {_dims(s)}")
    return ctx.xp.concatenate(values, axis=a)


@kernel("Pack")
def pack(ctx: Any, *values: Any) -> Any:
    s0 = np.shape(values[0])
    for i, v in enumerate(values[1:], 1):
        if np.shape(v) != s0:
            raise _bad(f"Shapes of all inputs must match: values[0].shape = {_dims(s0)} != "
                       f"values[{i}].shape = {_dims(np.shape(v))}")
    a = ctx.attrs["axis"]
    r = len(s0) + 1
    if not -r <= a < r:
        raise _bad(f"axis = {a} not in [{-r}, {r})")
    return ctx.xp.stack(values, axis=a % r)


@kernel("Unpack")
def unpack(ctx: Any, x: Any) -> Any:
    s = np.shape(x)
    a = ctx.attrs["axis"]
    num = ctx.attrs["num"]
    if not -len(s) <= a < len(s):
        raise _bad(f"axis = {a} not in [{-len(s)}, {len(s)})")
    a %= len(s)
    if s[a] != num:
        raise _bad(f"Input shape axis {a} must equal {num}, got shape {_dims(s)}")
    return [ctx.xp.take(x, i, axis=a) for i in range(num)]


def _split_axis(x: Any, axis: Any) -> int:
    r = np.ndim(x)
    a = int(axis)
    if not -r <= a < r:
        raise _bad(f"-input rank(-{r}) <= split_dim < input rank ({r}), but got {a}")
    return a % r


@kernel("Split", host_memory=("split_dim",))
def split(ctx: Any, axis: Any, x: Any) -> Any:
    a = _split_axis(x, axis)
    n = ctx.attrs["num_split"]
    d = np.shape(x)[a]
    if d % n:
        raise _bad(f"Number of ways to split should evenly divide the split dimension, but got "
                   f"split_dim {a} (size = {d}) and num_split {n}")
    return list(ctx.xp.split(x, n, axis=a))


@kernel("SplitV", host_memory=("size_splits", "split_dim"))
def split_v(ctx: Any, x: Any, size_splits: Any, axis: Any) -> Any:
    a = _split_axis(x, axis)
    sizes = _ints(size_splits)
    d = np.shape(x)[a]
    n = ctx.attrs["num_split"]
    if len(sizes) != n:
        raise _bad(f"Length of size_splits should be equal to num_split: {len(sizes)} vs {n}")
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise _bad(f"There can only be one -1 in the input. {_dims(sizes)}")
    known = sum(s for s in sizes if s != -1)
    if unknown and known <= d:
        sizes[unknown[0]] = d - known
    elif unknown or known != d or any(s < 0 for s in sizes):
        raise _bad("Determined shape must either match input shape along split_dim exactly if "
                   "fully specified, or be less than the size of the input along split_dim if not "
                   f"fully specified.  Got: {known}")
    return list(ctx.xp.split(x, np.cumsum(sizes)[:-1].tolist(), axis=a))


# --- creation -------------------------------------------------------------------------
@kernel("Fill", host_memory=("dims",))
def fill(ctx: Any, dims: Any, value: Any) -> Any:
    if np.ndim(dims) != 1:
        raise _bad(f"dims must be a vector, got shape {_dims(np.shape(dims))}")
    if np.ndim(value) != 0:
        raise _bad(f"value must be a scalar, got shape {_dims(np.shape(value))}")
    d = _ints(dims)
    for x in d:
        if x < 0:
            raise _bad(f"Dimension {x} must be >= 0")
    if _is_string(value):  # strings are object arrays of bytes, in NumPy on every device
        return np.full(d, value if isinstance(value, bytes) else value.item(), dtype=object)
    v = ctx.xp.asarray(value)
    return ctx.xp.full(d, v, dtype=v.dtype)


@kernel("ZerosLike")
def zeros_like(ctx: Any, x: Any) -> Any:
    if _is_string(x):
        return np.full(np.shape(x), b"", dtype=object)
    return ctx.xp.zeros_like(ctx.xp.asarray(x))


@kernel("OnesLike")
def ones_like(ctx: Any, x: Any) -> Any:
    x = ctx.xp.asarray(x)
    return ctx.xp.ones_like(x)


# --- dimensions -------------------------------------------------------------------------
@kernel("ExpandDims", host_memory=("dim",))
def expand_dims(ctx: Any, x: Any, dim: Any) -> Any:
    if type(x) is np.ndarray and isinstance(dim, np.integer):
        r = x.ndim  # the usual case: a 0-d dim (a NumPy scalar in a step) in range
        d0 = int(dim)
        if -r - 1 <= d0 <= r:
            a = d0 % (r + 1)
            return x.reshape(x.shape[:a] + (1,) + x.shape[a:])
    d = _ints(dim)
    if len(d) != 1:
        raise _bad(f"'dim' must be a tensor with a single value, got {d}")
    r = np.ndim(x)
    if not -r - 1 <= d[0] <= r:
        raise _bad(f"Tried to expand dim index {d[0]} for tensor with {r} dimensions.")
    return ctx.xp.expand_dims(x, d[0] % (r + 1))


@kernel("Squeeze")
def squeeze(ctx: Any, x: Any) -> Any:
    s = np.shape(x)
    r = len(s)
    axes = set()
    for a in ctx.attrs["squeeze_dims"]:
        if not -r <= a < r:
            raise _bad(f"Tried to squeeze dim index {a} for tensor with {r} dimensions.")
        a %= r
        if s[a] != 1:
            raise _bad(f"Can not squeeze dim[{a}], expected a dimension of 1, got {s[a]}")
        axes.add(a)
    if not ctx.attrs["squeeze_dims"]:
        axes = {i for i, d in enumerate(s) if d == 1}
    return ctx.xp.reshape(x, [d for i, d in enumerate(s) if i not in axes])


@kernel("Tile", host_memory=("multiples",))
def tile(ctx: Any, x: Any, multiples: Any) -> Any:
    m = multiples.tolist() if type(multiples) is np.ndarray and multiples.ndim == 1 else _ints(multiples)
    r = x.ndim if type(x) is np.ndarray else np.ndim(x)
    if len(m) != r:
        raise _bad(f"Expected multiples argument to be a vector of length {r} but got length {len(m)}")
    for i, v in enumerate(m):
        if v < 0:
            raise _bad(f"Expected multiples[{i}] >= 0, but got {v}")
    return ctx.xp.tile(x, m) if r else x


def _paddings(x: Any, paddings: Any) -> np.ndarray:
    p = np.asarray(paddings)
    r = np.ndim(x)
    if p.ndim != 2 or p.shape != (r, 2):
        raise _bad(f"The first dimension of paddings must be the rank of inputs{_dims(p.shape)} "
                   f"{_dims(np.shape(x))}")
    if (p < 0).any():
        i = int(np.argwhere(p < 0)[0][0])
        raise _bad(f"Paddings must be non-negative: {p[i, 0]} {p[i, 1]}")
    return p.astype(np.int64)


@kernel("Pad", host_memory=("paddings",))
def pad(ctx: Any, x: Any, paddings: Any) -> Any:
    p = _paddings(x, paddings)
    x = ctx.xp.asarray(x)
    if x.dtype == object:
        return np.pad(x, p.tolist(), constant_values=b"")
    return ctx.xp.pad(x, p.tolist())


@kernel("PadV2", host_memory=("paddings",))
def pad_v2(ctx: Any, x: Any, paddings: Any, constant_values: Any) -> Any:
    p = _paddings(x, paddings)
    if np.ndim(constant_values) != 0:
        raise _bad(f"constant_values must be a scalar. Found: {_dims(np.shape(constant_values))}")
    return ctx.xp.pad(ctx.xp.asarray(x), p.tolist(), constant_values=constant_values)


@kernel("MirrorPad", host_memory=("paddings",))
def mirror_pad(ctx: Any, x: Any, paddings: Any) -> Any:
    p = _paddings(x, paddings)
    mode = ctx.attrs["mode"]
    off = 1 if mode == "REFLECT" else 0
    for i, d in enumerate(np.shape(x)):
        if p[i, 0] > d - off or p[i, 1] > d - off:
            if off:
                raise _bad(f"paddings must be less than the dimension size: {p[i, 0]}, {p[i, 1]} "
                           f"not less than {d}")
            raise _bad(f"paddings must be no greater than the dimension size: {p[i, 0]}, {p[i, 1]} "
                       f"greater than {d}")
    return ctx.xp.pad(ctx.xp.asarray(x), p.tolist(), mode=mode.lower())


@kernel("ReverseV2", host_memory=("axis",))
def reverse_v2(ctx: Any, x: Any, axis: Any) -> Any:
    r = np.ndim(x)
    axes = []
    for i, a in enumerate(_ints(axis)):
        if not -r <= a < r:
            raise _bad(f"'axis'[{i}] = {a} is out of valid range [0, {r - 1}")
        if a % r in axes:
            raise _bad(f"axis {a % r} specified more than once.")
        axes.append(a % r)
    return ctx.xp.flip(x, axis=tuple(axes)) if axes else x


# --- selection --------------------------------------------------------------------------
@kernel("Where")
def where(ctx: Any, x: Any) -> Any:
    if np.ndim(x) == 0:
        raise _bad("WhereOp : Unhandled input dimensions: 0")
    return ctx.xp.argwhere(ctx.xp.asarray(x)).astype(np.int64)


@kernel("Select")
def select(ctx: Any, c: Any, t: Any, e: Any) -> Any:
    xp = ctx.xp
    ts, es, cs = np.shape(t), np.shape(e), np.shape(c)
    if ts != es:
        raise _bad(f"'then' and 'else' must have the same size.  but received: {_dims(ts)} vs. {_dims(es)}")
    if cs == ts or len(cs) == 0:
        return xp.where(c, t, e)
    if len(cs) == 1 and len(ts) >= 1:
        if cs[0] != ts[0]:
            raise _bad(f"Number of batches of 'then' must match size of 'cond', but saw: {ts[0]} vs. {cs[0]}")
        return xp.where(xp.reshape(c, cs + (1,) * (len(ts) - 1)), t, e)
    raise _bad(f"'cond' must be a scalar, vector or have the shape of 'then': {_dims(cs)} vs. {_dims(ts)}")


@kernel("SelectV2")
def select_v2(ctx: Any, c: Any, t: Any, e: Any) -> Any:
    try:
        np.broadcast_shapes(np.shape(c), np.shape(t), np.shape(e))
    except ValueError:
        raise _bad(f"condition {_dims(np.shape(c))}, then {_dims(np.shape(t))}, and else "
                   f"{_dims(np.shape(e))} must be broadcastable") from None
    return ctx.xp.where(c, t, e)


@kernel("OneHot", host_memory=("depth",))
def one_hot(ctx: Any, indices: Any, depth: Any, on: Any, off: Any) -> Any:
    xp = ctx.xp
    d = int(depth)
    if d < 0:
        raise _bad(f"depth must be non-negative, got: {d}")
    for v, what in ((on, "on_value"), (off, "off_value")):
        if np.ndim(v) != 0:
            raise _bad(f"{what} must be a scalar, but got: {_dims(np.shape(v))}")
    idx = xp.asarray(indices)
    r = idx.ndim
    a = ctx.attrs["axis"]
    a = r if a == -1 else a
    if not 0 <= a <= r:
        raise _bad(f"Expected axis to be -1 or between [0, {r + 1}).  But received: {ctx.attrs['axis']}")
    hot = idx[..., None] == xp.arange(d, dtype=idx.dtype if idx.dtype.kind == "i" else np.int64)
    on_a, off_a = xp.asarray(on), xp.asarray(off)
    out = xp.where(hot, on_a, off_a).astype(on_a.dtype, copy=False)
    return xp.moveaxis(out, -1, a) if a != r else out


# --- helpers of gradient functions, broadcasting ------------------------------------
@kernel("InvertPermutation")
def invert_permutation(ctx: Any, x: Any) -> Any:
    p = _host(x)
    if p.ndim != 1:
        raise _bad(f"invert_permutation expects a 1D vector, got shape {_dims(p.shape)}")
    n = p.size
    seen = np.zeros(n, dtype=np.bool_)
    for v in p.tolist():
        if not 0 <= v < n:
            raise _bad(f"{v} is not between 0 and {n}")
        if seen[v]:
            raise _bad(f"{v} is duplicated in the input.")
        seen[v] = True
    out = np.empty_like(p)
    out[p] = np.arange(n, dtype=p.dtype)
    return ctx.xp.asarray(out)


@kernel("ConcatOffset", host_memory=("concat_dim", "shape", "offset"))
def concat_offset(ctx: Any, concat_dim: Any, *shapes: Any) -> Any:
    s0 = np.asarray(shapes[0])
    r = s0.size
    a = int(concat_dim)
    if not -r <= a < r:
        raise _bad(f"Concat dim is out of range: {a} vs. {r}")
    a %= r
    out = []
    offset = 0
    for i, sh in enumerate(shapes):
        sh = np.asarray(sh)
        if sh.size != r:
            raise _bad(f"input {i} should contain {r} elements, but got {sh.size}")
        for j in range(r):
            if j != a and sh[j] != s0[j]:
                raise _bad(f"All dimensions except {a} must match. Input {i} has shape "
                           f"{_dims(sh.tolist())} and doesn't match input 0 with shape {_dims(s0.tolist())}.")
        o = np.zeros(r, dtype=sh.dtype)
        o[a] = offset
        offset += int(sh[a])
        out.append(o)
    return out


@kernel("MirrorPadGrad", host_memory=("paddings",))
def mirror_pad_grad(ctx: Any, g: Any, paddings: Any) -> Any:
    xp = ctx.xp
    p = np.asarray(paddings).astype(np.int64).reshape(-1, 2)
    mode = ctx.attrs["mode"].lower()
    out = xp.asarray(g)
    for axis in range(out.ndim):
        n = out.shape[axis] - int(p[axis].sum())
        if n < 0:
            raise _bad(f"paddings must be no greater than the dimension size: {p[axis, 0]}, {p[axis, 1]}")
        source = xp.asarray(np.pad(np.arange(n), (int(p[axis, 0]), int(p[axis, 1])), mode=mode))
        moved = xp.moveaxis(out, axis, 0)
        acc = xp.zeros((n,) + moved.shape[1:], dtype=out.dtype)
        xp.add.at(acc, source, moved)
        out = xp.moveaxis(acc, 0, axis)
    return out


@kernel("BroadcastTo", host_memory=("shape",))
def broadcast_to(ctx: Any, x: Any, shape: Any) -> Any:
    s = tuple(_ints(shape))
    xs = np.shape(x)
    if len(xs) > len(s):
        raise _bad(f"Rank of input ({len(xs)}) must be no greater than rank of output shape ({len(s)}).")
    try:
        return ctx.xp.broadcast_to(x, s)
    except ValueError:
        raise _bad(f"Incompatible shapes: {_dims(xs)} vs. {_dims(s)}") from None


@kernel("Unique")
def unique(ctx: Any, x: Any) -> Any:
    a = np.asarray(x) if ctx.xp is np else x.get()
    if a.ndim != 1:
        raise _bad(f"unique expects a 1D vector. but got shape {_dims(a.shape)}")
    vals, first, inverse = np.unique(a, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # TensorFlow keeps first-appearance order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse.reshape(-1)].astype(_np_type(ctx, "out_idx"))
    return [ctx.xp.asarray(vals[order]), ctx.xp.asarray(idx)]


# The indexing kernels (Slice, StridedSlice, gathers, scatters, partitions) register from
# their own module, which mirrors flowlab.ops.slicing.
from flowlab.kernels import slicing_kernels  # noqa: E402,F401
