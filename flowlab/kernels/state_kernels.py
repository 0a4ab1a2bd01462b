"""Kernels of the variable ops (flowlab.ops.state_ops).

`VariableV2` returns the `VariableState` of its (container, shared_name or op name)
from the device's resource manager, creating it uninitialized on first use; it lives
until the session is closed.  The update kernels receive that state object for their
`Ref(T)` input.  They compute a new array, freeze it (read-only) and store it with
`step.write_var`, which keeps the old value for rollback; they never modify the
stored array in place, so a read taken earlier in a step stays a stable snapshot.
With `use_locking` the whole read-modify-write happens under the variable's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel
from flowlab.kernels.resources import VariableState, freeze


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


def _update(ctx: Any, step: Any, ref: VariableState, compute: Callable[[Any], Any]) -> VariableState:
    """Read-modify-write `ref` (`compute` returns a new array), atomically when the op
    asks for locking."""
    if ctx.attrs["use_locking"]:
        with ref.lock:
            step.write_var(ref, _fresh(compute(ref.read())))
    else:
        step.write_var(ref, _fresh(compute(ref.read())))
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
    step.write_var(ref, _fresh(old + value if sign > 0 else old - value))
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
def _trunc_divide_at(a: Any, idx: Any, b: Any) -> None:
    # Integer ScatterDiv truncates toward zero (C++ semantics), one row at a time so
    # repeated indices divide repeatedly.
    for i, j in enumerate(idx):
        num, den = a[j], b[i]
        if np.any(den == 0):
            raise errors.InvalidArgumentError(None, None, "Integer division by zero")
        q = np.abs(num) // np.abs(den)
        a[j] = np.where((num < 0) != (den < 0), -q, q)


def _scatter_apply(how: str) -> Callable[[Any, Any, Any], None]:
    if how == "update":
        def put(a: Any, idx: Any, upd: Any) -> None:
            a[idx] = upd
        return put
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "min": np.minimum, "max": np.maximum}[how]

    def at(a: Any, idx: Any, upd: Any) -> None:
        if how == "div" and a.dtype.kind in "iu":
            _trunc_divide_at(a, idx, upd)
        else:
            ufunc.at(a, idx, upd)

    return at


def _scatter_kernel(op_type: str, how: str) -> None:
    apply = _scatter_apply(how)

    def scatter(ctx: Any, step: Any, ref: VariableState, indices: Any, updates: Any) -> VariableState:
        def compute(params: Any) -> Any:
            params = np.asarray(params)
            idx = np.asarray(indices)
            upd = np.asarray(updates)
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
            if bad.any():
                i = int(np.argmax(bad))
                where = (
                    "[" + ",".join(str(int(k)) for k in np.unravel_index(i, idx.shape)) + "]"
                    if idx.ndim else ""
                )
                raise errors.InvalidArgumentError(
                    None, None, f"indices{where} = {flat[i]} is not in [0, {n})"
                )
            rows = np.broadcast_to(upd, want).reshape((flat.size,) + params.shape[1:])
            new = params.copy()
            with np.errstate(all="ignore"):
                apply(new, flat, rows)
            return new

        return _update(ctx, step, ref, compute)

    scatter.__name__ = scatter.__qualname__ = f"scatter_{how}"
    # Written over NumPy (ufunc.at has no CuPy twin with the same semantics): CPU only.
    kernel(op_type, devices="CPU", step=True)(scatter)


for _op_type, _how in (
    ("ScatterUpdate", "update"), ("ScatterAdd", "add"), ("ScatterSub", "sub"),
    ("ScatterMul", "mul"), ("ScatterDiv", "div"), ("ScatterMin", "min"), ("ScatterMax", "max"),
):
    _scatter_kernel(_op_type, _how)


def _scatter_nd_kernel(op_type: str, how: str) -> None:
    apply = _scatter_apply(how)

    def scatter_nd(ctx: Any, step: Any, ref: VariableState, indices: Any, updates: Any) -> VariableState:
        def compute(params: Any) -> Any:
            params = np.asarray(params)
            idx = np.asarray(indices)
            upd = np.asarray(updates)
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
            bad = ((rows < 0) | (rows >= np.asarray(params.shape[:k]))).any(axis=1)
            if bad.any():
                i = int(np.argmax(bad))
                raise errors.InvalidArgumentError(
                    None, None,
                    f"indices[{i}] = [{', '.join(str(int(x)) for x in rows[i])}] does not index "
                    f"into shape {_shape_str(params.shape)}",
                )
            new = params.copy()
            with np.errstate(all="ignore"):
                apply(new, tuple(rows.T), upd.reshape((rows.shape[0],) + params.shape[k:]))
            return new

        return _update(ctx, step, ref, compute)

    scatter_nd.__name__ = scatter_nd.__qualname__ = f"scatter_nd_{how}"
    kernel(op_type, devices="CPU", step=True)(scatter_nd)


for _op_type, _how in (("ScatterNdUpdate", "update"), ("ScatterNdAdd", "add"), ("ScatterNdSub", "sub")):
    _scatter_nd_kernel(_op_type, _how)


@kernel("IsVariableInitialized", host_memory=("is_initialized",))
def is_variable_initialized(ctx: Any, ref: VariableState) -> Any:
    return np.bool_(ref.is_initialized)


@kernel("CountUpTo", devices="CPU", step=True)
def count_up_to(ctx: Any, step: Any, ref: VariableState) -> Any:
    limit = ctx.attrs["limit"]
    # The check and the increment are one atomic step, as TensorFlow's kernel.
    with ref.lock:
        before = ref.read()
        if before >= limit:
            raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
        step.write_var(ref, freeze(np.asarray(before + 1, dtype=before.dtype)))
    return before
