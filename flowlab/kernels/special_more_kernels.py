"""Kernels of Erfinv, Ndtri, BesselI0, BesselI1 and NextAfter (flowlab.ops.special_more_ops):
float64 on the host, rounded to the input's dtype.  The inverse normal CDF is Python's
`statistics.NormalDist.inv_cdf` (Wichura's AS241, double precision); erfinv(x) is
ndtri((x + 1) / 2) / sqrt(2); I0 and I1 are exp(|x|) times the scaled functions of
flowlab.kernels.special_functions."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from flowlab.kernels import special_functions
from flowlab.kernels.registry import CPU, kernel

_STD = NormalDist()


def _ndtri_scalar(p: float) -> float:
    if math.isnan(p) or p < 0.0 or p > 1.0:
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    return _STD.inv_cdf(p)


def ndtri64(p: Any) -> np.ndarray:
    a = np.asarray(p, dtype=np.float64)
    return np.vectorize(_ndtri_scalar, otypes=[np.float64])(a) if a.size else a.copy()


def _out(value: np.ndarray, like: Any) -> Any:
    out = np.asarray(value).astype(np.asarray(like).dtype, copy=False)
    return out[()] if out.ndim == 0 else out


@kernel("Ndtri", devices=CPU)
def ndtri(ctx: Any, x: Any) -> Any:
    return _out(ndtri64(x), x)


@kernel("Erfinv", devices=CPU)
def erfinv(ctx: Any, x: Any) -> Any:
    a = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        y = ndtri64((a + 1.0) / 2.0) / math.sqrt(2.0)
    return _out(y, x)


@kernel("BesselI0", devices=CPU)
def bessel_i0(ctx: Any, x: Any) -> Any:
    a = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        return _out(special_functions.bessel_i0e(a) * np.exp(np.abs(a)), x)


@kernel("BesselI1", devices=CPU)
def bessel_i1(ctx: Any, x: Any) -> Any:
    a = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        return _out(special_functions.bessel_i1e(a) * np.exp(np.abs(a)), x)


@kernel("NextAfter")
def next_after(ctx: Any, x1: Any, x2: Any) -> Any:
    return ctx.xp.nextafter(x1, x2)
