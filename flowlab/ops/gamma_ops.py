"""Gamma-family and Bessel special functions of `tf.math`: Lgamma, Digamma, Polygamma,
Zeta, Igamma / Igammac (regularized incomplete gamma), Betainc, BesselI0e / BesselI1e.

Declared with TensorFlow's op types, input names and float dtypes; the binary ones
broadcast like the arithmetic ops, Betainc takes equal shapes or scalars.  Gradients
are TensorFlow's math_grad.py formulas: Lgamma -> Digamma -> Polygamma(1, x);
Igamma/Igammac through IgammaGradA (dP/da) and a closed form in x; Betainc, Zeta and
Polygamma only in their last argument (TensorFlow returns None for the others).
Numerics: `flowlab.kernels.special_functions` (float64, CPU).
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.math_defs import FLOAT, _broadcast, _same
from flowlab.ops.math_grad import unbroadcast
from flowlab.ops.op_def import op_def

__all__ = ["lgamma", "digamma", "polygamma", "zeta", "igamma", "igammac", "betainc", "bessel_i0e", "bessel_i1e"]

_F = "{float32, float64}"
for _name in ("Lgamma", "Digamma"):
    op_def(_name, inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {FLOAT}"], shape_fn=_same)
for _name in ("BesselI0e", "BesselI1e"):
    op_def(_name, inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {FLOAT}"], shape_fn=_same)
for _name, _args in (("Igamma", ("a", "x")), ("Igammac", ("a", "x")), ("IgammaGradA", ("a", "x")),
                     ("Zeta", ("x", "q")), ("Polygamma", ("a", "x"))):
    op_def(_name, inputs=[f"{_args[0]}: T", f"{_args[1]}: T"], outputs=["z: T"], attrs=[f"T: {_F}"],
           shape_fn=_broadcast)
not_differentiable("IgammaGradA")


def _betainc_shape(op: Operation) -> list[Any]:
    out = TensorShape(None)
    for t in op.inputs:
        s = t.shape
        if s.ndims == 0:
            continue
        if out.ndims is not None and s.ndims is not None and not out.is_compatible_with(s):
            raise ValueError(f"Shapes must be equal rank, but are {out.ndims} and {s.ndims}" if out.ndims != s.ndims
                             else f"Dimensions must be equal: {out} vs {s}")
        out = out.merge_with(s) if out.ndims is not None else s
    if all(t.shape.ndims == 0 for t in op.inputs):
        return [TensorShape(())]
    return [out]


op_def("Betainc", inputs=["a: T", "b: T", "x: T"], outputs=["z: T"], attrs=[f"T: {_F}"], shape_fn=_betainc_shape)


# --- builders -------------------------------------------------------------------------------
def lgamma(x: Any, name: str | None = None) -> Tensor:
    """log|Gamma(x)| elementwise (inf at 0, -1, -2, ...)."""
    return apply_op("Lgamma", x=x, name=name or "Lgamma")


def digamma(x: Any, name: str | None = None) -> Tensor:
    """Psi(x) = d/dx lgamma(x) elementwise."""
    return apply_op("Digamma", x=x, name=name or "Digamma")


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The a-th derivative of digamma at x (a a non-negative integer in x's dtype)."""
    return apply_op("Polygamma", a=a, x=x, name=name or "Polygamma")


def zeta(x: Any, q: Any, name: str | None = None) -> Tensor:
    """Hurwitz zeta: sum over n >= 0 of (q + n) ** -x."""
    return apply_op("Zeta", x=x, q=q, name=name or "Zeta")


def igamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """Regularized lower incomplete gamma function P(a, x)."""
    return apply_op("Igamma", a=a, x=x, name=name or "Igamma")


def igammac(a: Any, x: Any, name: str | None = None) -> Tensor:
    """Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return apply_op("Igammac", a=a, x=x, name=name or "Igammac")


def betainc(a: Any, b: Any, x: Any, name: str | None = None) -> Tensor:
    """Regularized incomplete beta function I_x(a, b)."""
    return apply_op("Betainc", a=a, b=b, x=x, name=name or "Betainc")


def _scoped_unary(op_type: str, default: str, x: Any, name: str | None) -> Tensor:
    g = graph_of([x])
    with g.as_default(), g.name_scope(name or default):
        return apply_op(op_type, x=convert_to_tensor(x, name="x"), name=op_type)


def bessel_i0e(x: Any, name: str | None = None) -> Tensor:
    """Exponentially scaled modified Bessel function of order 0: exp(-|x|) I0(x)."""
    return _scoped_unary("BesselI0e", "bessel_i0e", x, name)


def bessel_i1e(x: Any, name: str | None = None) -> Tensor:
    """Exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x)."""
    return _scoped_unary("BesselI1e", "bessel_i1e", x, name)


# --- gradients (TensorFlow's math_grad.py) ----------------------------------------------------
@gradient("Lgamma")
def _lgamma_grad(op: Operation, grad: Tensor) -> Any:
    return [grad * digamma(op.inputs[0])]


@gradient("Digamma")
def _digamma_grad(op: Operation, grad: Tensor) -> Any:
    x = op.inputs[0]
    return [grad * polygamma(convert_to_tensor(1, dtype=x.dtype), x)]


@gradient("Polygamma")
def _polygamma_grad(op: Operation, grad: Tensor) -> Any:
    n, x = op.inputs
    return [None, unbroadcast(op, None, polygamma(n + 1, x) * grad)[1]]


@gradient("Zeta")
def _zeta_grad(op: Operation, grad: Tensor) -> Any:
    x, q = op.inputs
    return [None, unbroadcast(op, None, -x * zeta(x + 1, q) * grad)[1]]


def _igamma_grads(op: Operation, grad: Tensor) -> tuple[Any, Any]:
    a, x = op.inputs
    partial_a = apply_op("IgammaGradA", a=a, x=x, name="IgammaGradA")
    # In log space: Gamma(a) and x ** (a - 1) overflow long before their ratio does.
    partial_x = math_ops.exp(-x + (a - 1) * math_ops.log(x) - lgamma(a))
    return unbroadcast(op, partial_a * grad, partial_x * grad)


@gradient("Igamma")
def _igamma_grad(op: Operation, grad: Tensor) -> Any:
    return list(_igamma_grads(op, grad))


@gradient("Igammac")
def _igammac_grad(op: Operation, grad: Tensor) -> Any:
    ga, gx = _igamma_grads(op, grad)
    return [-ga, -gx]


@gradient("Betainc")
def _betainc_grad(op: Operation, grad: Tensor) -> Any:
    from flowlab.ops.special_math_ops import xlog1py, xlogy

    a, b, x = op.inputs
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    partial_x = math_ops.exp(xlog1py(b - 1, -x) + xlogy(a - 1, x) - log_beta)
    gx = partial_x * grad
    sx, sz = x.shape.as_tuple(), op.outputs[0].shape.as_tuple()
    if sx == () and sz != ():
        gx = math_ops.reduce_sum(gx)
    return [None, None, gx]


@gradient("BesselI0e")
def _bessel_i0e_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs[0], op.outputs[0]
    return [grad * (bessel_i1e(x) - math_ops.sign(x) * y)]


@gradient("BesselI1e")
def _bessel_i1e_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs[0], op.outputs[0]
    # At x = 0 the formula divides by zero; the derivative there is 1/2.
    safe = bessel_i0e(x) - y * (math_ops.sign(x) + math_ops.reciprocal(x))
    half = math_ops.cast(0.5, x.dtype)
    return [grad * array_ops.where_v2(math_ops.equal(x, math_ops.cast(0, x.dtype)), half, safe)]
