"""Kernels of `flowlab.ops.special_math_ops`: inverse hyperbolic functions, Erfc,
Rint, and the products and quotients that give 0 instead of NaN (Xlogy, Xdivy,
Xlog1py where x == 0; DivNoNan, MulNoNan where y == 0), written over `ctx.xp` except
Erfc (no erfc in NumPy: `math.erfc` per element on the host, as Erf)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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
