"""Kernels of the ops that gradient functions build: BroadcastGradientArgs, the fused
backward ops of the math and nn families (TanhGrad, ReluGrad, BiasAddGrad, ...), and
IdentityN (custom gradients).  The ops are declared beside their gradient functions in
flowlab/ops/math_grad.py, nn_grad.py and custom_gradient.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel
from flowlab.ops.math_grad import broadcast_reduction_axes

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _scalar_out(x: Any) -> Any:
    """0-d results as NumPy scalars (the step's convention)."""
    return x[()] if getattr(x, "ndim", 1) == 0 else x


# A shape computation: on an accelerator every input and output stays in host memory.
@kernel("BroadcastGradientArgs", host_memory=("s0", "s1", "r0", "r1"))
def _broadcast_gradient_args(ctx: Any, s0: Any, s1: Any) -> Any:
    dt = ctx.attrs["T"].as_numpy_dtype
    try:
        rx, ry = broadcast_reduction_axes(s0.tolist(), s1.tolist())
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    return np.array(rx, dt), np.array(ry, dt)



_FUSED_FORMULAS = {
    "TanhGrad": lambda y, dy, t: dy * (t(1) - y * y),
    "SigmoidGrad": lambda y, dy, t: dy * (y * (t(1) - y)),
    "SqrtGrad": lambda y, dy, t: dy * t(0.5) / y,
    "RsqrtGrad": lambda y, dy, t: dy * (t(-0.5) * y * y * y),
    "ReciprocalGrad": lambda y, dy, t: -dy * y * y,
}


def _fused_kernel(name: str) -> None:
    fn = _FUSED_FORMULAS[name]

    @kernel(name)
    def k(ctx: Any, y: Any, dy: Any) -> Any:
        return fn(y, dy, ctx.attrs["T"].as_numpy_dtype)


for _name in _FUSED_FORMULAS:
    _fused_kernel(_name)


# The signed integer type of each float width: a select on the bits of a float.
_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


@kernel("ReluGrad")
def _relu_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    xp = ctx.xp
    bits = _BITS.get(g.dtype.itemsize) if g.dtype.kind == "f" else None
    if bits is not None and type(g) is np.ndarray and type(f) is np.ndarray and g.shape == f.shape:
        # TensorFlow's select (g where f > 0, else +0.0) on the bits: g AND a mask of
        # all ones where f > 0 (an int8 -1 widens to all ones).  Exact for every g
        # (inf, NaN, -0.0 kept; +0.0 where masked), ~10x faster than `where` with a
        # scalar operand and 1.4-1.8x faster than `g * (f > 0)` plus its finiteness
        # check and -0.0 fix (micro-benchmark on [128,512], hot and cold caches).
        mask = (f > 0).view(np.int8)
        np.negative(mask, out=mask)
        return np.bitwise_and(g.view(bits), mask).view(g.dtype)
    return _scalar_out(xp.where(f > 0, g, g.dtype.type(0)))


@kernel("Relu6Grad")
def _relu6_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    return _scalar_out(ctx.xp.where((f > 0) & (f < 6), g, g.dtype.type(0)))


@kernel("EluGrad")
def _elu_grad_k(ctx: Any, g: Any, y: Any) -> Any:
    t = g.dtype.type
    return _scalar_out(ctx.xp.where(y > 0, g, g * (y + t(1))))


@kernel("SeluGrad")
def _selu_grad_k(ctx: Any, g: Any, y: Any) -> Any:
    t = g.dtype.type
    return _scalar_out(ctx.xp.where(y > 0, g * t(_SELU_SCALE), g * (y + t(_SELU_SCALE * _SELU_ALPHA))))


@kernel("LeakyReluGrad")
def _leaky_relu_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    t = g.dtype.type
    return _scalar_out(ctx.xp.where(f > 0, g, g * t(ctx.attrs["alpha"])))


@kernel("SoftplusGrad")
def _softplus_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    t = g.dtype.type
    return _scalar_out(g / (t(1) + ctx.xp.exp(-f)))


@kernel("SoftsignGrad")
def _softsign_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    t = g.dtype.type
    d = t(1) + ctx.xp.abs(f)
    return _scalar_out(g / (d * d))


@kernel("BiasAddGrad")
def _bias_add_grad_k(ctx: Any, g: Any) -> Any:
    channel = 1 if ctx.attrs["data_format"] == "NCHW" and g.ndim > 2 else g.ndim - 1
    axes = tuple(i for i in range(g.ndim) if i != channel)
    return ctx.xp.sum(g, axis=axes).astype(g.dtype, copy=False)


@kernel("IdentityN")
def _identity_n(ctx: Any, *xs: Any) -> Any:
    return list(xs)


