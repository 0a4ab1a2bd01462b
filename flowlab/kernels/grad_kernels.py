"""Kernels of the ops that gradient functions build: BroadcastGradientArgs, the fused
backward ops of the math and nn families (TanhGrad, ReluGrad, BiasAddGrad, ...), and
IdentityN (custom gradients).  The ops are declared beside their gradient functions in
flowlab/ops/math_grad.py, nn_grad.py and custom_gradient.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import batch_blocks
from flowlab.kernels.fp_state import ignoring
from flowlab.kernels.registry import can_forward, kernel
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


# TensorFlow's Sqrt/Rsqrt/Reciprocal gradients are 0 where the incoming gradient is 0,
# whatever y is (cwise_ops_gradients.h): a masked-out sqrt(-1) or 1/0 in a tf.where, or
# tf.norm of zeros, back-propagates zeros, not NaN.  Tanh and Sigmoid have no such case.
_ZERO_WHERE_DY_ZERO = frozenset({"SqrtGrad", "RsqrtGrad", "ReciprocalGrad"})


def _fused_kernel(name: str) -> None:
    fn = _FUSED_FORMULAS[name]

    if name in _ZERO_WHERE_DY_ZERO:
        @kernel(name)
        def k0(ctx: Any, y: Any, dy: Any) -> Any:
            t = ctx.attrs["T"].as_numpy_dtype
            return _scalar_out(ctx.xp.where(dy == 0, t(0), fn(y, dy, t)).astype(t, copy=False))
        return

    @kernel(name)
    def k(ctx: Any, y: Any, dy: Any) -> Any:
        return fn(y, dy, ctx.attrs["T"].as_numpy_dtype)


for _name in _FUSED_FORMULAS:
    _fused_kernel(_name)


@kernel("ReluGrad", forward=(0,))
def _relu_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    # TensorFlow's CPU kernel multiplies by the mask (gradients * (features > 0)): an
    # inf or NaN gradient gives NaN where the feature is <= 0 and a negative one -0.0
    # (checked against TensorFlow 2.21).  Also the cheapest form; in place when the
    # gradient dies here (buffer forwarding), as the NumPy step's `dz *= h > 0`.
    blocks = batch_blocks.bounds(g)
    if len(blocks) > 2 and type(f) is np.ndarray and f.shape == g.shape:
        out = g if ctx.forwardable and can_forward(g) else np.empty_like(g)
        batch_blocks.each(blocks, lambda lo, hi: np.multiply(g[lo:hi], f[lo:hi] > 0, out=out[lo:hi]))
        return out
    mask = f > 0
    with ignoring():  # 0 * inf is TensorFlow's NaN, silently
        if (ctx.forwardable and can_forward(g) and type(mask) is np.ndarray
                and mask.shape == g.shape):
            return np.multiply(g, mask, out=g)
        return _scalar_out(g * mask)


@kernel("Relu6Grad")
def _relu6_grad_k(ctx: Any, g: Any, f: Any) -> Any:
    return _scalar_out(ctx.xp.where((f > 0) & (f < 6), g, g.dtype.type(0)))


@kernel("EluGrad")
def _elu_grad_k(ctx: Any, g: Any, y: Any) -> Any:
    t = g.dtype.type
    # TensorFlow's test is outputs < 0: a NaN output passes the gradient through
    return _scalar_out(ctx.xp.where(y < 0, g * (y + t(1)), g))


@kernel("SeluGrad")
def _selu_grad_k(ctx: Any, g: Any, y: Any) -> Any:
    t = g.dtype.type
    # TensorFlow's test is outputs < 0, so selu'(0) is the scale (not scale * alpha)
    return _scalar_out(ctx.xp.where(y < 0, g * (y + t(_SELU_SCALE * _SELU_ALPHA)), g * t(_SELU_SCALE)))


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
    if channel == g.ndim - 1 and _wide_sums_apply(g):
        sums: Any = _channel_sums
    else:
        def sums(part: Any) -> Any:
            return ctx.xp.sum(part, axis=axes)
    blocks = batch_blocks.bounds(g)
    if len(blocks) > 2:
        parts: list[Any] = [None] * (len(blocks) - 1)
        index = {lo: i for i, lo in enumerate(blocks[:-1])}

        def block(lo: int, hi: int) -> None:
            parts[index[lo]] = sums(g[lo:hi])

        batch_blocks.each(blocks, block)
        total = parts[0]
        for p in parts[1:]:
            total += p
        return total.astype(g.dtype, copy=False)
    return sums(g).astype(g.dtype, copy=False)


# The channel sums of a channels-last gradient, [rows, c], as NumPy reduces axis 0:
# row after row into c accumulators, an inner loop of c elements (32 or 64 for a
# convolution: short, so slow).  Folding `r` rows into one row of r*c first gives r*c
# accumulators and long inner loops, then r partial sums per channel: cnn_train's
# first BiasAddGrad, [64,28,28,32] float32, 1.3 -> 0.2 ms, and closer to the exact sum
# (max error 5e-3 -> 4e-4 against float64), having added shorter runs.
_WIDE_ROW = 8192


def _wide_sums_apply(g: Any) -> bool:
    return (type(g) is np.ndarray and g.ndim >= 2 and g.flags.c_contiguous
            and g.dtype in (np.float32, np.float64) and 0 < g.shape[-1] < _WIDE_ROW // 2)


def _channel_sums(g: np.ndarray) -> np.ndarray:
    c = g.shape[-1]
    rows = g.size // c
    g2 = g.reshape(rows, c)
    r = max(1, min(rows, _WIDE_ROW // c))
    whole = rows - rows % r
    total = g2[:whole].reshape(-1, r * c).sum(axis=0).reshape(r, c).sum(axis=0)
    if whole < rows:
        total += g2[whole:].sum(axis=0)
    return total


@kernel("IdentityN")
def _identity_n(ctx: Any, *xs: Any) -> Any:
    return list(xs)


