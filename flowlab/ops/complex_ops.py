"""Complex numbers: `tf.complex`, `tf.real`, `tf.imag`, `tf.angle` (also under tf.math)
and `tf.to_complex64` / `tf.to_complex128`.

The ops are TensorFlow's Complex (broadcasting real + imag*j; float32 -> complex64,
float64 -> complex128), Real, Imag and Angle (complex -> its float part type).  As in
TensorFlow, `real` of a real tensor is the tensor itself, `imag` its zeros and `angle`
pi where it is negative; the gradients are TensorFlow's (math_grad.py): Complex splits
the gradient into its real and imaginary parts (summed back over broadcast axes), Real
and Imag put it back into a complex, Angle is -grad / (imag + real*j).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.array_ops import _name_scope
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.math_defs import _broadcast, _same
from flowlab.ops.op_def import op_def

__all__ = ["complex", "real", "imag", "angle", "to_complex64", "to_complex128"]

_COMPLEX = "{complex64, complex128} = complex64"
op_def("Complex", inputs=["real: T", "imag: T"], outputs=["out: Tout"],
       attrs=["T: {float32, float64} = float32", f"Tout: {_COMPLEX}"], shape_fn=_broadcast)
for _t in ("Real", "Imag", "Angle"):
    op_def(_t, inputs=["input: T"], outputs=["output: Tout"],
           attrs=[f"T: {_COMPLEX}", "Tout: {float32, float64} = float32"], shape_fn=_same)


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's name
    """real + imag * 1j elementwise (broadcasting).

    >>> tf.complex([2.25, 3.25], [4.75, 5.75])   # [2.25+4.75j, 3.25+5.75j]
    """
    with _name_scope(name, "Complex") as scope:
        re = convert_to_tensor(real, name="real")
        im = convert_to_tensor(imag, name="imag")
        if re.dtype.base_dtype != im.dtype.base_dtype:
            raise TypeError(f"real and imag have incompatible types: {re.dtype.name} and {im.dtype.name}")
        if re.dtype.base_dtype == dtypes.float64:
            tout = dtypes.complex128
        elif re.dtype.base_dtype == dtypes.float32:
            tout = dtypes.complex64
        else:
            raise TypeError(f"Types of real and imag don't match: {re.dtype.name} {im.dtype.name}")
        return apply_op("Complex", real=re, imag=im, Tout=tout, name=scope)


def _part(op_type: str, x: Tensor, scope: str) -> Tensor:
    return apply_op(op_type, input=x, Tout=x.dtype.base_dtype.real_dtype, name=scope)


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The real part of a complex tensor (a real tensor is returned as is)."""
    with _name_scope(name, "Real") as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.base_dtype.is_complex:
            return _part("Real", x, scope)
        return x


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The imaginary part of a complex tensor (zeros for a real one)."""
    with _name_scope(name, "Imag") as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.base_dtype.is_complex:
            return _part("Imag", x, scope)
        return array_ops.zeros_like(x)


def angle(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The argument atan2(imag, real) of each element (a real tensor: pi where negative, else 0)."""
    with _name_scope(name, "Angle") as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.base_dtype.is_complex:
            return _part("Angle", x, scope)
        return array_ops.where(math_ops.less(x, 0), np.pi * array_ops.ones_like(x), array_ops.zeros_like(x))


def to_complex64(x: Any, name: str = "ToComplex64") -> Tensor:
    """`tf.cast(x, tf.complex64)` (deprecated in TensorFlow 1.x, still used)."""
    return math_ops.cast(x, dtypes.complex64, name=name)


def to_complex128(x: Any, name: str = "ToComplex128") -> Tensor:
    """`tf.cast(x, tf.complex128)`."""
    return math_ops.cast(x, dtypes.complex128, name=name)


@gradient("Complex")
def _complex_grad(op: Operation, grad: Tensor) -> Any:
    from flowlab.ops.math_grad import unbroadcast

    return list(unbroadcast(op, real(grad), imag(grad)))


@gradient("Real")
def _real_grad(op: Operation, grad: Tensor) -> Any:
    return [complex(grad, array_ops.zeros_like(grad))]


@gradient("Imag")
def _imag_grad(op: Operation, grad: Tensor) -> Any:
    return [complex(array_ops.zeros_like(grad), grad)]


@gradient("Angle")
def _angle_grad(op: Operation, grad: Tensor) -> Any:
    x = op.inputs[0]
    from flowlab.graph.graph import get_default_graph

    with get_default_graph().control_dependencies([grad]):
        re, im = real(x), imag(x)
        z = math_ops.reciprocal(complex(im, re))
        zero = convert_to_tensor(0, dtype=grad.dtype)
        complex_grad = complex(grad, zero)
        return [-complex_grad * z]
