"""Kernels of the math ops, written once over `ctx.xp` (NumPy on CPU, CuPy on GPU).

Every kernel returns exactly the op's declared dtype: reductions accumulate in the
input dtype (int8 sums wrap, as TensorFlow's do) and inputs always share one dtype,
so NumPy's promotion never widens a result.  Floating overflow and division by zero
give inf/NaN silently, as in TensorFlow; integer division by zero and other bad
input raise `InvalidArgumentError` with TensorFlow's message.

The elementwise kernels on the hot path (AddV2, Sub, Mul) are a bare operator call:
`try` costs nothing until a shape mismatch raises.  On the straight-line path they
write into an input that dies at them when the registry's forwarding rules allow it
(`ctx.forwardable`, `can_forward`, `fits`: flowlab.kernels.registry).

Large 2-D GEMMs on the CPU are shared out among the intra-op threads
(flowlab.kernels.intra_op.sharded_matmul).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.fp_state import ignoring
from flowlab.kernels.intra_op import sharded_matmul
from flowlab.kernels.registry import CPU, can_forward, fits, kernel


def _dims(shape: Any) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _incompatible(x: Any, y: Any) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, None, f"Incompatible shapes: {_dims(np.shape(x))} vs. {_dims(np.shape(y))}"
    )


def _no_kernel(ctx: Any, dtype: Any) -> errors.InvalidArgumentError:
    t = "DT_" + np.dtype(dtype).name.upper().replace("FLOAT32", "FLOAT").replace("FLOAT64", "DOUBLE")
    return errors.InvalidArgumentError(
        None, None,
        f"No OpKernel was registered to support Op '{ctx.op_type}' used by {{{{node {ctx.name}}}}} "
        f"with these attrs: [T={t}]",
    )


def _is_int(x: Any) -> bool:
    return x.dtype.kind in "iu"


# --- hot path -----------------------------------------------------------------------
@kernel("AddV2", forward=(0, 1))
def add_v2(ctx: Any, x: Any, y: Any) -> Any:
    f = ctx.forwardable
    if f:  # x or y dies here: write into it (the can_forward call must stay in this frame)
        if f[0] == 0 and can_forward(x) and fits(y, x):
            return np.add(x, y, out=x)
        if f[-1] == 1 and can_forward(y) and fits(x, y):
            return np.add(x, y, out=y)
    try:
        return x + y
    except ValueError:
        raise _incompatible(x, y) from None


@kernel("Sub", forward=(0, 1))
def sub(ctx: Any, x: Any, y: Any) -> Any:
    f = ctx.forwardable
    if f:
        if f[0] == 0 and can_forward(x) and fits(y, x):
            return np.subtract(x, y, out=x)
        if f[-1] == 1 and can_forward(y) and fits(x, y):
            return np.subtract(x, y, out=y)
    try:
        return x - y
    except ValueError:
        raise _incompatible(x, y) from None


@kernel("Mul", forward=(0, 1))
def mul(ctx: Any, x: Any, y: Any) -> Any:
    f = ctx.forwardable
    if f:
        if f[0] == 0 and can_forward(x) and fits(y, x):
            return np.multiply(x, y, out=x)
        if f[-1] == 1 and can_forward(y) and fits(x, y):
            return np.multiply(x, y, out=y)
    try:
        return x * y
    except ValueError:
        raise _incompatible(x, y) from None


def _strings(v: Any) -> Any:
    # 0-d string values travel as bytes; make them 0-d object arrays.
    return v if isinstance(v, np.ndarray) else np.asarray(v, dtype=object)


@kernel("Add", devices=CPU)  # strings live on the host
def add(ctx: Any, x: Any, y: Any) -> Any:
    try:
        if ctx.attrs["T"].name == "string":
            return _strings(x) + _strings(y)  # elementwise bytes concatenation
        return x + y
    except ValueError:
        raise _incompatible(x, y) from None


# --- other binary ops ---------------------------------------------------------------
def _binary(op_type: str, fn: Callable[..., Any], warns: bool = True) -> None:
    """Register `fn(xp, x, y)` with broadcasting errors (and NumPy warnings muted)."""

    def k(ctx: Any, x: Any, y: Any) -> Any:
        try:
            if warns:
                with np.errstate(all="ignore"):
                    return fn(ctx.xp, x, y)
            return fn(ctx.xp, x, y)
        except ValueError as e:
            if "broadcast" in str(e):
                raise _incompatible(x, y) from None
            raise

    k.__name__ = op_type
    kernel(op_type)(k)


def _check_int_divisor(y: Any) -> None:
    if _is_int(y) and not y.all():  # the method: np.all's dispatch costs more here
        raise errors.InvalidArgumentError(None, None, "Integer division by zero")


def _floor_div(xp: Any, x: Any, y: Any) -> Any:
    _check_int_divisor(y)
    return xp.floor_divide(x, y)


def _floor_mod(xp: Any, x: Any, y: Any) -> Any:
    _check_int_divisor(y)
    return xp.mod(x, y)


def _trunc_div(xp: Any, x: Any, y: Any) -> Any:
    if _is_int(x):
        if not np.all(y):
            raise errors.InternalError(
                None, None, "Unexpected error in binary operator (only integer div and mod should have errors)"
            )
        q = xp.floor_divide(x, y)
        # C division rounds toward zero: bump the floored quotient where it rounded down.
        fix = (xp.mod(x, y) != 0) & ((x < 0) != (y < 0))
        return (q + fix.astype(q.dtype)).astype(x.dtype)
    if x.dtype.kind == "c":
        return x / y
    return xp.trunc(x / y)


def _trunc_mod(xp: Any, x: Any, y: Any) -> Any:
    if _is_int(x):
        _check_int_divisor(y)
    return xp.fmod(x, y)


def _pow(xp: Any, x: Any, y: Any) -> Any:
    if _is_int(y) and np.any(y < 0):
        raise errors.InvalidArgumentError(None, None, "Integers to negative integer powers are not allowed")
    return xp.power(x, y)


def _squared_difference(xp: Any, x: Any, y: Any) -> Any:
    d = x - y
    return d * xp.conj(d) if d.dtype.kind == "c" else d * d


def _div(xp: Any, x: Any, y: Any) -> Any:
    _check_int_divisor(y)
    return _trunc_div(xp, x, y) if _is_int(x) else x / y


_binary("Div", _div)
_binary("TruncateDiv", _trunc_div)
_binary("FloorDiv", _floor_div)
_binary("FloorMod", _floor_mod)
_binary("TruncateMod", _trunc_mod)
_binary("Pow", _pow)
_binary("Maximum", lambda xp, x, y: xp.maximum(x, y), warns=False)
_binary("Minimum", lambda xp, x, y: xp.minimum(x, y), warns=False)
_binary("SquaredDifference", _squared_difference)
_binary("Atan2", lambda xp, x, y: xp.arctan2(x, y))
_binary("Less", lambda xp, x, y: xp.less(x, y), warns=False)
_binary("LessEqual", lambda xp, x, y: xp.less_equal(x, y), warns=False)
_binary("Greater", lambda xp, x, y: xp.greater(x, y), warns=False)
_binary("GreaterEqual", lambda xp, x, y: xp.greater_equal(x, y), warns=False)
_binary("LogicalAnd", lambda xp, x, y: xp.logical_and(x, y), warns=False)
_binary("LogicalOr", lambda xp, x, y: xp.logical_or(x, y), warns=False)
_binary("BitwiseAnd", lambda xp, x, y: xp.bitwise_and(x, y), warns=False)
_binary("BitwiseOr", lambda xp, x, y: xp.bitwise_or(x, y), warns=False)
_binary("BitwiseXor", lambda xp, x, y: xp.bitwise_xor(x, y), warns=False)


@kernel("RealDiv")
def real_div(ctx: Any, x: Any, y: Any) -> Any:
    if _is_int(x):  # TensorFlow registers no integer RealDiv kernel
        raise _no_kernel(ctx, x.dtype)
    try:
        with np.errstate(all="ignore"):
            return x / y
    except ValueError:
        raise _incompatible(x, y) from None


def _equality(op_type: str, fn: Callable[..., Any], mismatch: bool) -> None:
    @kernel(op_type)
    def k(ctx: Any, x: Any, y: Any) -> Any:
        try:
            if ctx.attrs["T"].name == "string":
                return np.asarray(fn(_strings(x), _strings(y)), dtype=bool)[()]
            return fn(x, y)
        except ValueError:
            if ctx.attrs.get("incompatible_shape_error", True):
                raise _incompatible(x, y) from None
            return np.bool_(mismatch)


_equality("Equal", lambda x, y: x == y, False)
_equality("NotEqual", lambda x, y: x != y, True)


# --- unary ops ------------------------------------------------------------------------
def _unary(op_type: str, fn: Callable[..., Any], warns: bool = True) -> None:
    if warns:
        def k(ctx: Any, x: Any) -> Any:
            with np.errstate(all="ignore"):
                return fn(ctx.xp, x)
    else:
        def k(ctx: Any, x: Any) -> Any:
            return fn(ctx.xp, x)

    k.__name__ = op_type
    kernel(op_type)(k)


def _sigmoid(xp: Any, x: Any) -> Any:
    return 1 / (1 + xp.exp(-x))


def _reciprocal(xp: Any, x: Any) -> Any:
    return 1 / x


@kernel("Erf", devices=CPU)  # no erf in NumPy: math.erf per element, on the host
def erf(ctx: Any, x: Any) -> Any:
    flat = np.asarray(x, dtype=np.float64).reshape(-1)
    out = np.array([math.erf(v) for v in flat.tolist()], dtype=np.float64)
    return out.reshape(np.shape(x)).astype(x.dtype)[()]


_unary("Neg", lambda xp, x: -x, warns=False)
_unary("Abs", lambda xp, x: xp.abs(x), warns=False)
_unary("ComplexAbs", lambda xp, x: xp.abs(x))
_unary("Conj", lambda xp, x: xp.conj(x), warns=False)
_unary("Sign", lambda xp, x: xp.sign(x), warns=False)
_unary("Square", lambda xp, x: x * x)
_unary("Sqrt", lambda xp, x: xp.sqrt(x))
_unary("Rsqrt", lambda xp, x: 1 / xp.sqrt(x))
_unary("Exp", lambda xp, x: xp.exp(x))
_unary("Expm1", lambda xp, x: xp.expm1(x))
_unary("Log", lambda xp, x: xp.log(x))
_unary("Log1p", lambda xp, x: xp.log1p(x))
_unary("Tanh", lambda xp, x: xp.tanh(x))
_unary("Sigmoid", _sigmoid)
_unary("Sin", lambda xp, x: xp.sin(x))
_unary("Cos", lambda xp, x: xp.cos(x))
_unary("Tan", lambda xp, x: xp.tan(x))
_unary("Asin", lambda xp, x: xp.arcsin(x))
_unary("Acos", lambda xp, x: xp.arccos(x))
_unary("Atan", lambda xp, x: xp.arctan(x))
_unary("Sinh", lambda xp, x: xp.sinh(x))
_unary("Cosh", lambda xp, x: xp.cosh(x))
_unary("Floor", lambda xp, x: xp.floor(x), warns=False)
_unary("Ceil", lambda xp, x: xp.ceil(x), warns=False)
_unary("Round", lambda xp, x: x.copy() if _is_int(x) else xp.round(x), warns=False)
_unary("IsNan", lambda xp, x: xp.isnan(x), warns=False)
_unary("IsInf", lambda xp, x: xp.isinf(x), warns=False)
_unary("IsFinite", lambda xp, x: xp.isfinite(x), warns=False)
_unary("LogicalNot", lambda xp, x: xp.logical_not(x), warns=False)
_unary("Invert", lambda xp, x: xp.invert(x), warns=False)


@kernel("Reciprocal")
def reciprocal(ctx: Any, x: Any) -> Any:
    if _is_int(x):  # TensorFlow registers no integer Reciprocal kernel on CPU
        raise _no_kernel(ctx, x.dtype)
    with np.errstate(all="ignore"):
        return 1 / x


# --- Cast, AddN ---------------------------------------------------------------------
@kernel("Cast")
def cast(ctx: Any, x: Any) -> Any:
    dst, src = ctx.attrs["DstT"], ctx.attrs["SrcT"]
    if dst.name == "string" or src.name == "string":
        if dst is src:
            return x
        raise errors.UnimplementedError(None, None, f"Cast {src.name} to {dst.name} is not supported")
    xp = ctx.xp
    t = dst.as_numpy_dtype
    if x.dtype.kind in "iub" and not dst.is_bool:
        return x.astype(t)  # from an integer or bool: no NaN, no warning to mute
    if x.dtype.kind == "c" and not dst.is_complex:
        x = x.real
    if dst.is_bool:
        return x != 0
    with np.errstate(all="ignore"):
        out = x.astype(t)
        if dst.is_integer and not dst.is_unsigned and x.dtype.kind == "f":
            # x86 C++ gives the most negative value for NaN and out-of-range floats.
            info = np.iinfo(t)
            bad = ~xp.isfinite(x) | (x < info.min) | (x >= float(info.max) + 1)
            if xp.any(bad):
                out = xp.where(bad, t(info.min), out).astype(t)
        return out


@kernel("AddN")
def add_n(ctx: Any, *xs: Any) -> Any:
    s0 = np.shape(xs[0])
    for i, x in enumerate(xs[1:], 1):
        if np.shape(x) != s0:
            raise errors.InvalidArgumentError(
                None, None,
                f"Inputs to operation {ctx.name} of type AddN must have the same size and shape.  "
                f"Input 0: {_dims(s0)} != input {i}: {_dims(np.shape(x))}",
            )
    out = xs[0] + xs[1] if len(xs) > 1 else xs[0].copy()
    for x in xs[2:]:
        out = out + x
    return out


# --- MatMul ---------------------------------------------------------------------------
# After TensorFlow's words, what a learner should do about them.
_MATMUL_ADVICE = (". For tf.matmul(a, b), a's last dimension must equal b's first (transpose_a/transpose_b "
                  "flip one); print the fed values' shapes.")


@kernel("MatMul", expensive=True)
def mat_mul(ctx: Any, a: Any, b: Any) -> Any:
    for i, m in enumerate((a, b)):
        if m.ndim != 2:
            raise errors.InvalidArgumentError(
                None, None, f"In[{i}] is not a matrix. Instead it has shape {_dims(m.shape)}"
            )
    sa, sb = a.shape, b.shape
    if ctx.attrs["transpose_a"]:
        a = a.T
    if ctx.attrs["transpose_b"]:
        b = b.T
    if a.shape[1] != b.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, f"Matrix size-incompatible: In[0]: {_dims(sa)}, In[1]: {_dims(sb)}{_MATMUL_ADVICE}"
        )
    if ctx.xp is np:
        return sharded_matmul(a, b)
    return ctx.xp.matmul(a, b)


# The sparsity hints only choose TensorFlow's algorithm; the product is MatMul's.
kernel("SparseMatMul", expensive=True)(mat_mul)


@kernel("BatchMatMulV2", expensive=True)
def batch_mat_mul_v2(ctx: Any, x: Any, y: Any) -> Any:
    for i, m in enumerate((x, y)):
        if m.ndim < 2:
            raise errors.InvalidArgumentError(None, None, f"In[{i}] ndims must be >= 2: {m.ndim}")
    xs, ys = x.shape, y.shape
    if ctx.attrs["adj_x"]:
        x = ctx.xp.conj(ctx.xp.swapaxes(x, -1, -2))
    if ctx.attrs["adj_y"]:
        y = ctx.xp.conj(ctx.xp.swapaxes(y, -1, -2))
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None,
            f"In[0] and In[1] must have compatible batch dimensions: {_dims(xs)} vs. {_dims(ys)}",
        ) from None
    if x.shape[-1] != y.shape[-2]:
        raise errors.InvalidArgumentError(
            None, None,
            f"Matrix size-incompatible: In[0]: {_dims(xs)}, In[1]: {_dims(ys)}{_MATMUL_ADVICE}",
        )
    return ctx.xp.matmul(x, y)


# --- reductions -----------------------------------------------------------------------
def _axes(x: Any, axes: Any) -> tuple[int, ...]:
    rank = x.ndim if isinstance(x, (np.ndarray, np.generic)) else np.ndim(x)
    if type(axes) is np.ndarray and axes.ndim <= 1:  # the usual cases, without np.asarray
        flat = axes.tolist() if axes.ndim else [axes.item()]
    elif isinstance(axes, np.integer):
        flat = [int(axes)]
    else:
        flat = np.asarray(axes.get() if hasattr(axes, "get") else axes).reshape(-1).tolist()  # cupy: to host
    if np.ndim(axes) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid reduction arguments: Axes must be a vector or scalar, got {_dims(np.shape(axes))}"
        )
    seen: list[int] = []
    for a in flat:
        if a < -rank or a >= rank:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension ({a} for input with {rank} dimension(s)"
            )
        a = a + rank if a < 0 else a
        if a in seen:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction arguments: Axes contains duplicate dimension: {a}"
            )
        seen.append(a)
    return tuple(seen)


def _reduction(op_type: str, fn: Callable[..., Any]) -> None:
    @kernel(op_type, host_memory=("reduction_indices",))
    def k(ctx: Any, x: Any, axes: Any) -> Any:
        ax = _axes(x, axes)
        keep = ctx.attrs["keep_dims"]
        with ignoring():
            out = fn(ctx.xp, x if type(x) is np.ndarray else ctx.xp.asarray(x), ax, keep)
        return out.astype(x.dtype, copy=False) if out.dtype != x.dtype else out

    k.__name__ = op_type


def _sum(xp: Any, x: Any, ax: Any, keep: bool) -> Any:
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    # The ufunc's reduce is what np.sum runs, minus its dispatch (~5 us a call).
    return (np.add.reduce if xp is np else xp.sum)(x, axis=ax, dtype=acc, keepdims=keep)


def _prod(xp: Any, x: Any, ax: Any, keep: bool) -> Any:
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    return (np.multiply.reduce if xp is np else xp.prod)(x, axis=ax, dtype=acc, keepdims=keep)


def _mean(xp: Any, x: Any, ax: Any, keep: bool) -> Any:
    n = 1
    for a in ax:
        n *= x.shape[a]
    if x.dtype.kind in "iu":
        s = xp.sum(x, axis=ax, dtype=np.int64 if x.dtype.kind == "i" else np.uint64, keepdims=keep)
        if n == 0:
            return xp.zeros_like(s)
        q = xp.abs(s) // n if x.dtype.kind == "i" else s // n
        return q * xp.sign(s) if x.dtype.kind == "i" else q  # C division truncates
    acc = np.dtype(np.float32 if x.dtype == np.float16 else x.dtype).type
    return _sum(xp, x, ax, keep) / acc(n)


def _extreme(name: str) -> Callable[..., Any]:
    def fn(xp: Any, x: Any, ax: Any, keep: bool) -> Any:
        if x.size == 0:
            # TensorFlow's identity for an empty max/min: -inf/+inf, or the int limits.
            if x.dtype.kind == "f":
                init = -np.inf if name == "max" else np.inf
            else:
                info = np.iinfo(x.dtype)
                init = info.min if name == "max" else info.max
            shape = [1 if i in ax else d for i, d in enumerate(x.shape)] if keep else [
                d for i, d in enumerate(x.shape) if i not in ax
            ]
            return xp.full(shape, init, dtype=x.dtype)[()]
        return getattr(xp, name)(x, axis=ax, keepdims=keep)

    return fn


_reduction("Sum", _sum)
_reduction("Prod", _prod)
_reduction("Mean", _mean)
_reduction("Max", _extreme("max"))
_reduction("Min", _extreme("min"))
_reduction("All", lambda xp, x, ax, keep: xp.all(x, axis=ax, keepdims=keep))
_reduction("Any", lambda xp, x, ax, keep: xp.any(x, axis=ax, keepdims=keep))


def _arg_reduction(op_type: str, fn_name: str) -> None:
    @kernel(op_type, host_memory=("dimension",))
    def k(ctx: Any, x: Any, dim: Any) -> Any:
        rank = np.ndim(x)
        d = int(np.asarray(dim.get() if hasattr(dim, "get") else dim).reshape(-1)[0])  # cupy: to host
        r = max(rank, 1)
        if d < -r or d >= r:
            raise errors.InvalidArgumentError(
                None, None, f"Expected dimension in the range [{-r}, {r}), but got {d}"
            )
        out_t = ctx.attrs["output_type"].as_numpy_dtype
        if rank == 0:
            return out_t(0)
        d = d + rank if d < 0 else d
        if x.shape[d] == 0:
            raise errors.InvalidArgumentError(
                None, None, f"Reduction axis {d} is empty in shape {_dims(x.shape)}"
            )
        xp = ctx.xp
        if x.dtype.kind == "f" and xp.isnan(x).any():
            # TensorFlow's comparisons never pick a NaN (all-NaN gives index 0).
            x = xp.where(xp.isnan(x), -xp.inf if fn_name == "argmax" else xp.inf, x)
        return getattr(xp, fn_name)(x, axis=d).astype(out_t)

    k.__name__ = op_type


_arg_reduction("ArgMax", "argmax")
_arg_reduction("ArgMin", "argmin")


def _scan(op_type: str, fn_name: str) -> None:
    @kernel(op_type, host_memory=("axis",))
    def k(ctx: Any, x: Any, axis: Any) -> Any:
        xp = ctx.xp
        rank = np.ndim(x)
        a = int(axis)
        if a < -rank or a >= rank:
            raise errors.InvalidArgumentError(
                None, None, f"ScanOp: Expected scan axis in the range [{-rank}, {rank}), but got {a}"
            )
        x = xp.asarray(x)
        if ctx.attrs["reverse"]:
            x = xp.flip(x, a)
        out = getattr(xp, fn_name)(x, axis=a, dtype=x.dtype)
        if ctx.attrs["exclusive"]:
            ident = 0 if fn_name == "cumsum" else 1
            pad = xp.full_like(xp.take(out, [0], axis=a), ident)
            out = xp.concatenate([pad, xp.take(out, range(out.shape[a] - 1), axis=a)], axis=a)
        if ctx.attrs["reverse"]:
            out = xp.flip(out, a)
        return xp.ascontiguousarray(out)

    k.__name__ = op_type


_scan("Cumsum", "cumsum")
_scan("Cumprod", "cumprod")


# --- Range ------------------------------------------------------------------------------
@kernel("Range", host_memory=("start", "limit", "delta"))
def range_(ctx: Any, start: Any, limit: Any, delta: Any) -> Any:
    from flowlab.ops.math_defs import range_size

    dt = ctx.attrs["Tidx"]
    for n, v in (("start", start), ("limit", limit), ("delta", delta)):
        if np.ndim(v) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"{n} must be a scalar, not shape {_dims(np.shape(v))}"
            )
    try:
        size = range_size(start, limit, delta, dt)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    t = dt.as_numpy_dtype
    xp = ctx.xp
    return (xp.arange(size, dtype=t) * t(delta) + t(start)).astype(t, copy=False)


@kernel("LinSpace", host_memory=("num",))
def lin_space(ctx: Any, start: Any, stop: Any, num: Any) -> Any:
    # TensorFlow's construction: start + i * ((stop - start) / (num - 1)) in the value
    # dtype, with the last entry exactly `stop`.
    n = int(num)
    if n < 0:
        raise errors.InvalidArgumentError(None, None, f"Requires num >= 0, got {n}")
    t = ctx.attrs["T"].as_numpy_dtype
    xp = ctx.xp
    if n == 0:
        return xp.zeros((0,), dtype=t)
    if n == 1:
        return xp.asarray([start], dtype=t)
    delta = (t(stop) - t(start)) / t(n - 1)
    out = (xp.arange(n, dtype=t) * delta + t(start)).astype(t, copy=False)
    out[-1] = stop
    return out
