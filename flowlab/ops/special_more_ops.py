"""More special functions of `tf.math`: the inverse error function and inverse normal
CDF (Erfinv, Ndtri; `erfcinv` is TensorFlow's composite -ndtri(x / 2) / sqrt(2)), the
unscaled modified Bessel functions I0 and I1 (BesselI0, BesselI1) and NextAfter (the
next representable float from x1 towards x2).

Gradients are TensorFlow's (math_grad.py): erfinv' = sqrt(pi)/2 exp(y^2), ndtri' =
sqrt(2 pi) exp(y^2 / 2), I0' = I1, I1' = I0 - I1 / x (1 at 0); NextAfter has none.
Kernels: flowlab.kernels.special_more_kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.math_defs import FLOAT, _broadcast, _same
from flowlab.ops.op_def import op_def

__all__ = ["erfinv", "ndtri", "erfcinv", "bessel_i0", "bessel_i1", "nextafter"]

for _name in ("Erfinv", "Ndtri", "BesselI0", "BesselI1"):
    op_def(_name, inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {FLOAT}"], shape_fn=_same)
op_def("NextAfter", inputs=["x1: T", "x2: T"], outputs=["output: T"], attrs=["T: {float64, float32} = float32"],
       shape_fn=_broadcast)
not_differentiable("NextAfter")


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return apply_op(op_type, x=convert_to_tensor(x, name="x"), name=name or op_type)


def erfinv(x: Any, name: str | None = None) -> Tensor:
    """The inverse of erf on (-1, 1) (+-inf at +-1, NaN outside)."""
    return _unary("Erfinv", x, name)


def ndtri(x: Any, name: str | None = None) -> Tensor:
    """The inverse of the standard normal CDF on (0, 1)."""
    return _unary("Ndtri", x, name)


def erfcinv(x: Any, name: str | None = None) -> Tensor:
    """The inverse of erfc on (0, 2)."""
    with get_default_graph().name_scope(name or "erfcinv"):
        x = convert_to_tensor(x, name="start")
        return -ndtri(0.5 * x) * np.sqrt(0.5)


def bessel_i0(x: Any, name: str | None = None) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    with get_default_graph().name_scope(name or "bessel_i0"):
        return _unary("BesselI0", x, "BesselI0")


def bessel_i1(x: Any, name: str | None = None) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    with get_default_graph().name_scope(name or "bessel_i1"):
        return _unary("BesselI1", x, "BesselI1")


def nextafter(x1: Any, x2: Any, name: str | None = None) -> Tensor:
    """The next representable value after x1 in the direction of x2, elementwise."""
    a = convert_to_tensor(x1, name="x1")
    return apply_op("NextAfter", x1=a, x2=convert_to_tensor(x2, name="x2", dtype=a.dtype.base_dtype),
                    name=name or "NextAfter")


@gradient("Erfinv")
def _erfinv_grad(op: Operation, grad: Tensor) -> Any:
    root_pi_over_two = np.sqrt(np.pi) / 2
    with get_default_graph().control_dependencies([grad]):
        return [grad * root_pi_over_two * math_ops.exp(math_ops.square(op.outputs[0]))]


@gradient("Ndtri")
def _ndtri_grad(op: Operation, grad: Tensor) -> Any:
    root_two_pi = np.sqrt(2 * np.pi)
    with get_default_graph().control_dependencies([grad]):
        return [grad * root_two_pi * math_ops.exp(math_ops.square(op.outputs[0]) / 2.0)]


@gradient("BesselI0")
def _bessel_i0_grad(op: Operation, grad: Tensor) -> Any:
    with get_default_graph().control_dependencies([grad]):
        return [grad * bessel_i1(op.inputs[0])]


@gradient("BesselI1")
def _bessel_i1_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs[0], op.outputs[0]
    with get_default_graph().control_dependencies([grad]):
        dy_dx = array_ops.where_v2(math_ops.equal(x, 0.0), math_ops.cast(1.0, x.dtype),
                                   bessel_i0(x) - math_ops.divide(y, x))
        return [grad * dy_dx]
