"""Kernels of the variable ops (flowlab.ops.state_ops).

`VariableV2` returns the `VariableState` of its (container, shared_name or op name)
from the device's resource manager, creating it uninitialized on first use; it lives
until the session is closed.  The update kernels receive that state object for their
`Ref(T)` input.  They compute a new array, freeze it (read-only) and store it with
`step.write_var`, which keeps the old value for rollback; they never modify the
stored array in place, so a read taken earlier in a step stays a stable snapshot.
With `use_locking` the whole read-modify-write happens under the variable's lock.

The scatter updates are written over `ctx.xp` and registered for CPU and GPU, their
indices and updates in device memory as in TensorFlow's GPU kernels.  `scatter_at`
is their in-place "ufunc.at": NumPy's on a CPU; on a GPU the module's own scatter
(CuPy 13's `ufunc.at`, or `cupyx.scatter_*`) where it has one for the op and dtype,
else `occurrence_rounds` (one vectorized update per round of distinct indices), so a
repeated index always applies its updates in order, as on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel
from flowlab.kernels.resources import INCREMENT_DIFF, VariableState, freeze


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _owned(ctx: Any, value: Any) -> Any:
    """`value` as an array the variable may keep: read-only, and never the caller's
    buffer (a fed array or a kernel's output could be written to later).  0-d values
    are kept as NumPy scalars, which are immutable and cheap to compute with (the
    runtime carries 0-d values as scalars everywhere)."""
    if type(value) is np.ndarray:
        if value.ndim == 0:
            return value[()]
        if value.flags.writeable:
            value = value.copy()
        return freeze(value)
    if isinstance(value, np.generic):
        return value
    if not hasattr(value, "shape"):
        return np.asarray(value)[()]
    # Another array module (CuPy) has no read-only flag: own a private copy.
    return ctx.xp.array(value, copy=True)


def _fresh(value: Any) -> Any:
    """A kernel's own new result, made read-only without a copy (scalars as they are)."""
    if type(value) is np.ndarray:
        if value.ndim == 0:
            return value[()]
        value.flags.writeable = False
    return value


def _update(ctx: Any, step: Any, ref: VariableState, compute: Callable[[Any], Any],
            increment: Any = None) -> VariableState:
    """Read-modify-write `ref` (`compute` returns a new array), atomically when the op
    asks for locking.  `increment`: how rollback takes the update back (Step.write_var)."""
    if ctx.attrs["use_locking"]:
        with ref.lock:
            step.write_var(ref, _fresh(compute(ref.read())), increment)
    else:
        step.write_var(ref, _fresh(compute(ref.read())), increment)
    return ref


@kernel("VariableV2")
def variable_v2(ctx: Any) -> VariableState:
    attrs = ctx.attrs
    state = ctx.resources.get(attrs["container"], attrs["shared_name"] or ctx.name)
    if state is not None:
        return state
    dtype = attrs["dtype"].as_numpy_dtype
    return ctx.resources.lookup_or_create(
        attrs["container"], attrs["shared_name"] or ctx.name,
        lambda: VariableState(ctx.name, np.dtype(dtype), attrs["shape"]),
    )


@kernel("Assign", step=True)
def assign(ctx: Any, step: Any, ref: VariableState, value: Any) -> VariableState:
    def write() -> None:
        if ctx.attrs["validate_shape"]:
            rhs = tuple(np.shape(value))
            current = ref.value
            if current is not None:
                ok, lhs = tuple(current.shape) == rhs, _shape_str(tuple(current.shape))
            else:
                declared = ref.shape
                ok = declared is None or (
                    len(declared) == len(rhs)
                    and all(d is None or d == r for d, r in zip(declared, rhs))
                )
                lhs = "<unknown>" if declared is None else (
                    "[" + ",".join("?" if d is None else str(d) for d in declared) + "]"
                )
            if not ok:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Assign requires shapes of both tensors to match. lhs shape= {lhs} "
                    f"rhs shape= {_shape_str(rhs)}",
                )
        step.write_var(ref, _owned(ctx, value))

    if ctx.attrs["use_locking"]:
        with ref.lock:
            write()
    else:
        write()
    return ref


def _same_size(params: Any, value: Any) -> None:
    if np.shape(params) != np.shape(value):
        raise errors.InvalidArgumentError(
            None, None,
            "Parameters and update must be the same size (lhs shape= "
            f"{_shape_str(np.shape(params))} rhs shape= {_shape_str(np.shape(value))})",
        )


def _add(step: Any, ref: VariableState, value: Any, sign: int) -> VariableState:
    # The hot path of every training counter: no closures, no errstate (steps already
    # ignore floating-point errors), one shape check, one NumPy operation.
    old = ref.read()
    if old.shape != value.shape:
        _same_size(old, value)
    step.write_var(ref, _fresh(old + value if sign > 0 else old - value), (value, sign))
    return ref


@kernel("AssignAdd", step=True)
def assign_add(ctx: Any, step: Any, ref: VariableState, value: Any) -> VariableState:
    if ctx.attrs["use_locking"]:
        with ref.lock:
            return _add(step, ref, value, 1)
    return _add(step, ref, value, 1)


@kernel("AssignSub", step=True)
def assign_sub(ctx: Any, step: Any, ref: VariableState, value: Any) -> VariableState:
    if ctx.attrs["use_locking"]:
        with ref.lock:
            return _add(step, ref, value, -1)
    return _add(step, ref, value, -1)


# --- scatter -----------------------------------------------------------------------
def occurrence_rounds(xp: Any, flat: Any) -> list[Any]:
    """Positions of the 1-d index array `flat` split into rounds of distinct indices:
    every index's first occurrence, then every second occurrence, and so on, each round
    in position order.  Applying an update round after round equals applying it index
    after index (what NumPy's `ufunc.at` and TensorFlow's CPU kernels do), with one
    vectorized operation per round on any array module.  `[None]` means "all at once"
    (no index repeats), the common case."""
    n = int(flat.shape[0])
    if n < 2:
        return [None]
    # Sorting (index, position) pairs keeps each index's occurrences in order whether or
    # not the module's sort is stable.
    keys = flat.astype(xp.int64) * n + xp.arange(n, dtype=xp.int64)
    order = xp.argsort(keys)
    ranked = flat[order]
    starts = xp.concatenate([xp.ones(1, dtype=bool), ranked[1:] != ranked[:-1]])
    if bool(starts.all()):  # one device-to-host read on a GPU
        return [None]
    first = xp.flatnonzero(starts)
    rank_sorted = xp.arange(n, dtype=xp.int64) - first[xp.cumsum(starts) - 1]
    rank = xp.empty(n, dtype=xp.int64)
    rank[order] = rank_sorted
    return [xp.flatnonzero(rank == r) for r in range(int(rank_sorted.max()) + 1)]


def _trunc_divide(xp: Any, num: Any, den: Any) -> Any:
    # Integer ScatterDiv truncates toward zero (C++ semantics).
    if bool((den == 0).any()):
        raise errors.InvalidArgumentError(None, None, "Integer division by zero")
    q = xp.abs(num) // xp.abs(den)
    return xp.where((num < 0) != (den < 0), -q, q)


_UFUNC_AT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "min": np.minimum, "max": np.maximum}
# Where a GPU module has `ufunc.at`: CuPy 13 and later for add/subtract/maximum/minimum
# (atomics); before that cupyx.scatter_add/max/min.  Used only for the dtypes CUDA's
# atomics cover as CuPy documents them; every other case goes round by round.
_XP_AT = {"add": "add", "sub": "subtract", "min": "minimum", "max": "maximum"}
_XPX_AT = {"add": "scatter_add", "sub": "scatter_add", "min": "scatter_min", "max": "scatter_max"}
XPX_AT_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.int32, np.uint32, np.uint64))


def _device_at(xp: Any, xpx: Any, how: str) -> Callable[[Any, Any, Any], None] | None:
    """The GPU module's in-place scatter for `how` (ufunc.at, else cupyx's), or None."""
    if how not in _XP_AT:
        return None
    at = getattr(getattr(xp, _XP_AT[how]), "at", None)
    if at is not None:
        return at
    fn = getattr(xpx, _XPX_AT[how], None) if xpx is not None else None
    if fn is None:
        return None
    if how == "sub":
        return lambda a, idx, upd: fn(a, idx, -upd)
    return fn


def scatter_at(xp: Any, xpx: Any, how: str, a: Any, idx: Any, upd: Any) -> None:
    """`a[idx] (how)= upd` in place, a repeated index applying its updates one after
    another (NumPy's `ufunc.at`; "update": the last one wins).  `idx` is an index array
    or a tuple of them (ScatterNd) with one entry per row of `upd`.  On NumPy: `ufunc.at`.
    On a GPU: distinct indices in one vectorized read-modify-write; repeated ones
    through the module's scatter (`_device_at`) where it has one for the dtype, else
    round by round (`occurrence_rounds`), which gives exactly the CPU's values."""
    if xp is np:
        if how == "update":
            a[idx] = upd
        elif how == "div" and a.dtype.kind in "iu":
            _trunc_divide_at(a, idx, upd)
        else:
            _UFUNC_AT[how].at(a, idx, upd)
        return
    flat = idx if not isinstance(idx, tuple) else _linear(xp, idx, a.shape, int(upd.shape[0]))
    rounds = occurrence_rounds(xp, flat)
    if len(rounds) > 1 and a.dtype in XPX_AT_DTYPES:
        at = _device_at(xp, xpx, how)
        if at is not None:
            at(a, idx, upd)
            return
    for pos in rounds:
        j = idx if pos is None else (idx[pos] if not isinstance(idx, tuple) else tuple(i[pos] for i in idx))
        u = upd if pos is None else upd[pos]
        a[j] = u if how == "update" else _combine(xp, how, a[j], u)


def _combine(xp: Any, how: str, old: Any, upd: Any) -> Any:
    if how == "div" and old.dtype.kind in "iu":
        return _trunc_divide(xp, old, upd)
    return {"add": xp.add, "sub": xp.subtract, "mul": xp.multiply, "div": xp.divide,
            "min": xp.minimum, "max": xp.maximum}[how](old, upd)


def _linear(xp: Any, idx: tuple[Any, ...], shape: tuple[int, ...], n: int) -> Any:
    """Row-major linear positions of the `n` rows of the ScatterNd index tuple `idx`
    (validated; an empty tuple addresses the whole array every time)."""
    flat = xp.zeros(n, dtype=xp.int64)
    for i, d in zip(idx, shape):
        flat = flat * d + i.astype(xp.int64)
    return flat


def _trunc_divide_at(a: Any, idx: Any, b: Any) -> None:
    # One row at a time so repeated indices divide repeatedly (NumPy, CPU).
    for i, j in enumerate(idx):
        a[j] = _trunc_divide(np, a[j], b[i])


def _xpx(ctx: Any) -> Any:
    # cupyx on a CuPy GPU (flowlab.runtime.task.gpu.GpuDevice.xpx); None on a CPU.
    return getattr(ctx.device, "xpx", None)


def _array(xp: Any, v: Any) -> Any:
    # A NumPy scalar (a 0-d value as the runtime carries it) as a 0-d array; arrays of
    # any module as they are.
    return v if hasattr(v, "ndim") and not isinstance(v, np.generic) else xp.asarray(v)


def _scatter_kernel(op_type: str, how: str) -> None:
    def scatter(ctx: Any, step: Any, ref: VariableState, indices: Any, updates: Any) -> VariableState:
        xp = ctx.xp

        def compute(params: Any) -> Any:
            params = _array(xp, params)
            idx = _array(xp, indices)
            upd = _array(xp, updates)
            want = idx.shape + params.shape[1:]
            if upd.ndim != 0 and upd.shape != want:
                raise errors.InvalidArgumentError(
                    None, None,
                    "Must have updates.shape = indices.shape + params.shape[1:] or "
                    f"updates.shape = [], got updates.shape {_shape_str(upd.shape)}, "
                    f"indices.shape {_shape_str(idx.shape)}, params.shape "
                    f"{_shape_str(params.shape)}",
                )
            n = params.shape[0]
            flat = idx.reshape(-1)
            bad = (flat < 0) | (flat >= n)
            if bad.any():  # on a GPU: one small device-to-host read
                i = int(xp.argmax(bad))
                where = (
                    "[" + ",".join(str(int(k)) for k in np.unravel_index(i, idx.shape)) + "]"
                    if idx.ndim else ""
                )
                raise errors.InvalidArgumentError(
                    None, None, f"indices{where} = {int(flat[i])} is not in [0, {n})"
                )
            rows = xp.broadcast_to(upd, want).reshape((flat.size,) + params.shape[1:])
            new = params.copy()
            with np.errstate(all="ignore"):
                scatter_at(xp, _xpx(ctx), how, new, flat, rows)
            return new

        return _update(ctx, step, ref, compute, INCREMENT_DIFF if how in ("add", "sub") else None)

    scatter.__name__ = scatter.__qualname__ = f"scatter_{how}"
    # Indices and updates in device memory on a GPU, as TensorFlow's GPU kernels.
    kernel(op_type, step=True)(scatter)


for _op_type, _how in (
    ("ScatterUpdate", "update"), ("ScatterAdd", "add"), ("ScatterSub", "sub"),
    ("ScatterMul", "mul"), ("ScatterDiv", "div"), ("ScatterMin", "min"), ("ScatterMax", "max"),
):
    _scatter_kernel(_op_type, _how)


def _scatter_nd_kernel(op_type: str, how: str) -> None:
    def scatter_nd(ctx: Any, step: Any, ref: VariableState, indices: Any, updates: Any) -> VariableState:
        xp = ctx.xp

        def compute(params: Any) -> Any:
            params = _array(xp, params)
            idx = _array(xp, indices)
            upd = _array(xp, updates)
            k = idx.shape[-1] if idx.ndim else 0
            if idx.ndim == 0 or k > params.ndim:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Dimensions of indices must be at least 1 and the last dimension of indices "
                    f"must be at most the rank of the variable; got indices.shape "
                    f"{_shape_str(idx.shape)}, params.shape {_shape_str(params.shape)}",
                )
            want = idx.shape[:-1] + params.shape[k:]
            if upd.shape != want:
                raise errors.InvalidArgumentError(
                    None, None,
                    "Must have updates.shape = indices.shape[:batch_dim] + params_shape["
                    f"slice_dim:], got updates.shape: {_shape_str(upd.shape)}, indices.shape: "
                    f"{_shape_str(idx.shape)}, params_shape: {_shape_str(params.shape)}",
                )
            rows = idx.reshape(-1, k)
            limits = xp.asarray(params.shape[:k], dtype=rows.dtype)
            bad = ((rows < 0) | (rows >= limits)).any(axis=1)
            if bad.any():  # on a GPU: one small device-to-host read
                i = int(xp.argmax(bad))
                raise errors.InvalidArgumentError(
                    None, None,
                    f"indices[{i}] = [{', '.join(str(int(x)) for x in rows[i])}] does not index "
                    f"into shape {_shape_str(params.shape)}",
                )
            new = params.copy()
            with np.errstate(all="ignore"):
                scatter_at(xp, _xpx(ctx), how, new, tuple(rows[:, d] for d in range(k)),
                           upd.reshape((rows.shape[0],) + params.shape[k:]))
            return new

        return _update(ctx, step, ref, compute, INCREMENT_DIFF if how in ("add", "sub") else None)

    scatter_nd.__name__ = scatter_nd.__qualname__ = f"scatter_nd_{how}"
    kernel(op_type, step=True)(scatter_nd)


for _op_type, _how in (("ScatterNdUpdate", "update"), ("ScatterNdAdd", "add"), ("ScatterNdSub", "sub")):
    _scatter_nd_kernel(_op_type, _how)


@kernel("IsVariableInitialized", host_memory=("is_initialized",))
def is_variable_initialized(ctx: Any, ref: VariableState) -> Any:
    return np.bool_(ref.is_initialized)


# CPU only, as in TensorFlow (count_up_to_op.cc registers no GPU kernel): placement
# keeps a counter and its CountUpTo on a CPU.
@kernel("CountUpTo", devices="CPU", step=True)
def count_up_to(ctx: Any, step: Any, ref: VariableState) -> Any:
    limit = ctx.attrs["limit"]
    # The check and the increment are one atomic step, as TensorFlow's kernel.
    with ref.lock:
        before = ref.read()
        if before >= limit:
            raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
        one = np.asarray(1, dtype=before.dtype)[()]
        step.write_var(ref, freeze(np.asarray(before + one, dtype=before.dtype)), (one, 1))
    return before
