"""Kernels of `flowlab.ops.special_math_ops`: inverse hyperbolic functions, Erfc,
Rint, and the products and quotients that give 0 instead of NaN (Xlogy, Xdivy,
Xlog1py where x == 0; DivNoNan, MulNoNan where y == 0), written over `ctx.xp` except
Erfc (no erfc in NumPy: `math.erfc` per element on the host, as Erf); EuclideanNorm and
CumulativeLogsumexp; and the gamma-family and Bessel functions of `flowlab.ops.gamma_ops`
(host only: float64 NumPy from `flowlab.kernels.special_functions`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowlab.errors import InvalidArgumentError
from flowlab.kernels import special_functions
from flowlab.kernels.registry import CPU, kernel


def _scalar(r: Any) -> Any:
    return r[()] if getattr(r, "ndim", 1) == 0 else r


def _unary(op_type: str, fn: Any) -> None:
    @kernel(op_type)
    def run(ctx: Any, x: Any) -> Any:
        with np.errstate(all="ignore"):
            return _scalar(ctx.xp.asarray(fn(ctx.xp, x)).astype(x.dtype, copy=False))


_unary("Asinh", lambda xp, x: xp.arcsinh(x))
_unary("Acosh", lambda xp, x: xp.arccosh(x))
_unary("Atanh", lambda xp, x: xp.arctanh(x))
_unary("Rint", lambda xp, x: xp.rint(x))


@kernel("Erfc", devices=CPU)
def erfc(ctx: Any, x: Any) -> Any:
    flat = np.asarray(x, dtype=np.float64).reshape(-1)
    out = np.array([math.erfc(v) for v in flat.tolist()], dtype=np.float64)
    return out.reshape(np.shape(x)).astype(x.dtype)[()]


def _masked(op_type: str, zero_where_x: bool, fn: Any) -> None:
    @kernel(op_type)
    def run(ctx: Any, x: Any, y: Any) -> Any:
        xp = ctx.xp
        with np.errstate(all="ignore"):
            val = fn(xp, x, y)
            mask = (x == 0) if zero_where_x else (y == 0)
            out = xp.where(mask, xp.zeros((), dtype=val.dtype), val)
        return _scalar(xp.asarray(out).astype(x.dtype, copy=False))


_masked("Xlogy", True, lambda xp, x, y: x * xp.log(y))
_masked("Xdivy", True, lambda xp, x, y: x / y)
_masked("Xlog1py", True, lambda xp, x, y: x * xp.log1p(y))
_masked("DivNoNan", False, lambda xp, x, y: x / y)
_masked("MulNoNan", False, lambda xp, x, y: x * y)


# --- gamma family and Bessel (flowlab.ops.gamma_ops): float64 NumPy, host only ----------------
def _special(op_type: str, fn: Any) -> None:
    @kernel(op_type, devices=CPU)
    def run(ctx: Any, *args: Any) -> Any:
        dtype = args[0].dtype
        out = np.asarray(fn(*args)).astype(dtype, copy=False)
        return out[()] if out.ndim == 0 else out


_special("Lgamma", special_functions.lgamma)
_special("Digamma", special_functions.digamma)
_special("Polygamma", special_functions.polygamma)
_special("Zeta", special_functions.zeta)
_special("Igamma", lambda a, x: special_functions.igamma_pq(a, x)[0])
_special("Igammac", lambda a, x: special_functions.igamma_pq(a, x)[1])
_special("IgammaGradA", special_functions.igamma_grad_a)
_special("BesselI0e", special_functions.bessel_i0e)
_special("BesselI1e", special_functions.bessel_i1e)


@kernel("Betainc", devices=CPU)
def betainc(ctx: Any, a: Any, b: Any, x: Any) -> Any:
    shapes = {np.shape(v) for v in (a, b, x) if np.ndim(v)}
    if len(shapes) > 1:
        a_s, b_s, x_s = (list(np.shape(v)) for v in (a, b, x))
        raise InvalidArgumentError(None, None, f"Shapes of a, b, and x are inconsistent: {a_s} vs. {b_s} vs. {x_s}")
    out = np.asarray(special_functions.betainc(a, b, x)).astype(a.dtype, copy=False)
    return out[()] if out.ndim == 0 else out


# --- EuclideanNorm and CumulativeLogsumexp (flowlab.ops.special_math_ops) ---------------------
@kernel("EuclideanNorm", host_memory=("reduction_indices",))
def euclidean_norm(ctx: Any, x: Any, axes: Any) -> Any:
    xp = ctx.xp
    axes = np.asarray(axes).reshape(-1).tolist()
    for a in axes:
        if not -max(x.ndim, 1) <= a < max(x.ndim, 1):
            raise InvalidArgumentError(None, None, f"Invalid reduction dimension ({a} for input with {x.ndim} "
                                       "dimension(s)")
    ax = tuple(sorted({a % x.ndim for a in axes})) if x.ndim else ()
    keep = ctx.attrs["keep_dims"]
    if x.dtype.kind == "c":
        out = xp.sqrt(xp.sum(x * xp.conj(x), axis=ax, keepdims=keep))
    elif x.dtype.kind in "iu":
        out = xp.sqrt(xp.sum(x.astype(np.float64) ** 2, axis=ax, keepdims=keep))
    else:
        with np.errstate(all="ignore"):
            out = xp.sqrt(xp.sum(xp.square(x), axis=ax, keepdims=keep))
    return _scalar(xp.asarray(out).astype(x.dtype))


@kernel("CumulativeLogsumexp", devices=CPU, host_memory=("axis",))  # cupy has no logaddexp.accumulate
def cumulative_logsumexp(ctx: Any, x: Any, axis: Any) -> Any:
    xp = ctx.xp
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise InvalidArgumentError(None, None, f"ScanOp: Expected scan axis in the range [{-x.ndim}, {x.ndim}), "
                                   f"but got {axis}")
    v = xp.moveaxis(x.astype(np.float32) if x.dtype == np.float16 else x, axis, -1)
    if ctx.attrs["reverse"]:
        v = v[..., ::-1]
    with np.errstate(all="ignore"):
        out = xp.logaddexp.accumulate(v, axis=-1) if v.shape[-1] else v
        if ctx.attrs["exclusive"] and v.shape[-1]:
            lowest = xp.full(v.shape[:-1] + (1,), -np.inf, dtype=v.dtype)
            out = xp.concatenate([lowest, out[..., :-1]], axis=-1)
    if ctx.attrs["reverse"]:
        out = out[..., ::-1]
    return xp.ascontiguousarray(xp.moveaxis(out, -1, axis)).astype(x.dtype)
