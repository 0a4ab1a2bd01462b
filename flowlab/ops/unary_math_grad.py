"""Gradients of the unary elementwise math ops, and the fused grad ops they use.

Each function has TensorFlow's signature and formula (math_grad.py), computed under
a control dependency on the incoming gradient as TensorFlow does (`_with_dep`);
complex inputs are conjugated (`_conj`).  A few fused "grad" ops that TensorFlow
also has (TanhGrad, SigmoidGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad) keep backward
passes small; they are declared here, with their own gradients (their kernels are in
flowlab.kernels.grad_kernels).  flowlab.ops.math_grad imports this module, so the
fused ops are declared whenever the math gradients are.
"""

from __future__ import annotations

import math
from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__: list[str] = []


def _conj(x: Tensor) -> Tensor:
    return math_ops.conj(x) if x.dtype.is_complex else x


def _with_dep(grad: Tensor) -> Any:
    """TensorFlow computes unary gradients under a control dependency on `grad`."""
    return grad.graph.control_dependencies([grad])


# --- unary ----------------------------------------------------------------------------
@gradient("Neg")
def _neg_grad(op: Operation, grad: Any) -> Any:
    return [-grad]


@gradient("Abs")
def _abs_grad(op: Operation, grad: Any) -> Any:
    return [math_ops.multiply(grad, math_ops.sign(op.inputs[0]))]


@gradient("Sign")
def _sign_grad(op: Operation, grad: Any) -> Any:
    return [array_ops.zeros_like(op.inputs[0])]


for _name in ("Round", "Floor", "Ceil"):
    gradient(_name)(lambda op, grad: [None])


@gradient("Square")
def _square_grad(op: Operation, grad: Any) -> Any:
    x = op.inputs[0]
    with _with_dep(grad):
        y = constant(2, dtype=x.dtype.base_dtype)
        return [math_ops.multiply(grad, math_ops.multiply(_conj(x), y))]


def _unary_via(fused: str, use_output: bool = True) -> Any:
    def grad_fn(op: Operation, grad: Any) -> Any:
        y = op.outputs[0] if use_output else op.inputs[0]
        with _with_dep(grad):
            return [apply_op(fused, y=_conj(y), dy=grad, name=fused)]

    return grad_fn


@gradient("Exp")
def _exp_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * _conj(op.outputs[0])]


@gradient("Expm1")
def _expm1_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * math_ops.exp(_conj(op.inputs[0]))]


@gradient("Log")
def _log_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * math_ops.reciprocal(_conj(op.inputs[0]))]


@gradient("Log1p")
def _log1p_grad(op: Operation, grad: Any) -> Any:
    x = op.inputs[0]
    with _with_dep(grad):
        one = constant(1, dtype=x.dtype.base_dtype)
        return [grad * math_ops.reciprocal(one + _conj(x))]


@gradient("Sin")
def _sin_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * math_ops.cos(_conj(op.inputs[0]))]


@gradient("Cos")
def _cos_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [-grad * math_ops.sin(_conj(op.inputs[0]))]


@gradient("Tan")
def _tan_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        secx = math_ops.reciprocal(math_ops.cos(_conj(op.inputs[0])))
        return [grad * math_ops.square(secx)]


def _inv_sqrt_one_minus_sq(x: Tensor) -> Tensor:
    one = constant(1, dtype=x.dtype.base_dtype)
    return math_ops.reciprocal(math_ops.sqrt(math_ops.subtract(one, math_ops.square(x))))


@gradient("Asin")
def _asin_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * _inv_sqrt_one_minus_sq(_conj(op.inputs[0]))]


@gradient("Acos")
def _acos_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [-grad * _inv_sqrt_one_minus_sq(_conj(op.inputs[0]))]


@gradient("Atan")
def _atan_grad(op: Operation, grad: Any) -> Any:
    x = _conj(op.inputs[0])
    with _with_dep(grad):
        one = constant(1, dtype=x.dtype.base_dtype)
        return [grad * math_ops.reciprocal(math_ops.add(one, math_ops.square(x)))]


@gradient("Sinh")
def _sinh_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * math_ops.cosh(_conj(op.inputs[0]))]


@gradient("Cosh")
def _cosh_grad(op: Operation, grad: Any) -> Any:
    with _with_dep(grad):
        return [grad * math_ops.sinh(_conj(op.inputs[0]))]


@gradient("Erf")
def _erf_grad(op: Operation, grad: Any) -> Any:
    x = op.inputs[0]
    two_over_root_pi = constant(2 / math.sqrt(math.pi), dtype=grad.dtype.base_dtype)
    with _with_dep(grad):
        return [grad * two_over_root_pi * math_ops.exp(-math_ops.square(x))]


@gradient("Conj")
def _conj_grad(op: Operation, grad: Any) -> Any:
    return [math_ops.conj(grad)]


@gradient("ComplexAbs")
def _complex_abs_grad(op: Operation, grad: Any) -> Any:
    # d|z| = Re(conj(z)/|z| dz): the gradient is grad * z / |z| (0 where z = 0).
    x, y = op.inputs[0], op.outputs[0]
    ct = x.dtype.base_dtype
    safe = array_ops.where_v2(math_ops.equal(y, array_ops.zeros_like(y)), array_ops.ones_like(y), y)
    g = math_ops.cast(grad / safe, ct) * x
    return [array_ops.where_v2(math_ops.equal(y, array_ops.zeros_like(y)), array_ops.zeros_like(x), g)]


# --- fused elementwise gradient ops (TensorFlow's names) -------------------------------
def _same_shape(op: Operation) -> list[Any]:
    return [op.inputs[0].shape.merge_with(op.inputs[1].shape)]


# Fused backward ops (y, dy) -> dz; their kernels are in flowlab.kernels.grad_kernels.
_FUSED = ("TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad")
for _name in _FUSED:
    op_def(_name, inputs=["y: T", "dy: T"], outputs=["z: T"],
           attrs=["T: {float16, float32, float64, complex64, complex128}"], shape_fn=_same_shape)


gradient("Tanh")(_unary_via("TanhGrad"))
gradient("Sigmoid")(_unary_via("SigmoidGrad"))
gradient("Sqrt")(_unary_via("SqrtGrad"))
gradient("Rsqrt")(_unary_via("RsqrtGrad"))
gradient("Reciprocal")(_unary_via("ReciprocalGrad"))


@gradient("TanhGrad")
def _tanh_grad_grad(op: Operation, grad: Any) -> Any:
    y, dy = op.inputs
    with _with_dep(grad):
        two = constant(-2, dtype=y.dtype.base_dtype)
        return [grad * two * dy * _conj(y), apply_op("TanhGrad", y=_conj(y), dy=grad, name="TanhGrad")]


@gradient("SigmoidGrad")
def _sigmoid_grad_grad(op: Operation, grad: Any) -> Any:
    y, dy = op.inputs
    with _with_dep(grad):
        gb = grad * dy
        two = constant(2, dtype=y.dtype.base_dtype)
        return [gb - two * gb * _conj(y), apply_op("SigmoidGrad", y=_conj(y), dy=grad, name="SigmoidGrad")]


@gradient("SqrtGrad")
def _sqrt_grad_grad(op: Operation, grad: Any) -> Any:
    y, dy = op.inputs
    z = op.outputs[0]
    with _with_dep(grad):
        ga = grad / y
        return [-math_ops.multiply(_conj(ga), z), 0.5 * _conj(ga)]


@gradient("RsqrtGrad")
def _rsqrt_grad_grad(op: Operation, grad: Any) -> Any:
    y, dy = op.inputs
    with _with_dep(grad):
        ca, cb = _conj(y), _conj(dy)
        grad_a = -1.5 * cb * grad * math_ops.square(ca)
        grad_b = apply_op("RsqrtGrad", y=ca, dy=grad, name="RsqrtGrad")
        return [grad_a, grad_b]


@gradient("ReciprocalGrad")
def _reciprocal_grad_grad(op: Operation, grad: Any) -> Any:
    y, dy = op.inputs
    with _with_dep(grad):
        ca, cb = _conj(y), _conj(dy)
        return [-2.0 * grad * cb * ca, apply_op("ReciprocalGrad", y=ca, dy=grad, name="ReciprocalGrad")]
