"""Kernels of Complex, Real, Imag and Angle (flowlab.ops.complex_ops)."""

from __future__ import annotations

from typing import Any

from flowlab.kernels.registry import kernel


@kernel("Complex")
def complex_(ctx: Any, real: Any, imag: Any) -> Any:
    xp = ctx.xp
    out = xp.empty(xp.broadcast_shapes(real.shape, imag.shape) if hasattr(xp, "broadcast_shapes")
                   else (real + imag).shape, dtype=ctx.attrs["Tout"].as_numpy_dtype)
    out.real, out.imag = real, imag
    return out


@kernel("Real")
def real(ctx: Any, input: Any) -> Any:  # noqa: A002
    return ctx.xp.real(input).astype(ctx.attrs["Tout"].as_numpy_dtype)


@kernel("Imag")
def imag(ctx: Any, input: Any) -> Any:  # noqa: A002
    return ctx.xp.imag(input).astype(ctx.attrs["Tout"].as_numpy_dtype)


@kernel("Angle")
def angle(ctx: Any, input: Any) -> Any:  # noqa: A002
    return ctx.xp.angle(input).astype(ctx.attrs["Tout"].as_numpy_dtype)
