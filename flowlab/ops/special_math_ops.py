"""More of `tf.math`: inverse hyperbolic functions (Asinh, Acosh, Atanh), Erfc, Rint,
the "no NaN" products and quotients (Xlogy, Xdivy, Xlog1py, DivNoNan, MulNoNan), and
the composites `reduce_variance` and `reduce_std`.

Also EuclideanNorm (`reduce_euclidean_norm`), CumulativeLogsumexp and `polyval` (Horner's
rule, as TensorFlow builds it), and the gamma family of `gamma_ops` re-exported.

Declared with TensorFlow's op types, dtypes and broadcasting shape function (reused
from `math_defs`); builders name their ops as TensorFlow does ("Asinh", "Xlogy";
`divide_no_nan` and `multiply_no_nan` open a "div_no_nan" / "multiply_no_nan" scope and
name the op after it).  Gradients are TensorFlow's math_grad.py formulas; broadcast
inputs get theirs summed back with `math_grad.unbroadcast`.  Kernels:
`flowlab.kernels.special_math_kernels`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.gamma_ops import *  # noqa: F403  (lgamma, digamma, igamma, betainc, bessel_i0e, ...)
from flowlab.ops.gamma_ops import __all__ as _gamma_all
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.math_defs import FLOAT, FLOAT_C, NUMERIC, _binary, _reduction, _scan, _unary
from flowlab.ops.math_grad import _kept_shape, unbroadcast
from flowlab.ops.op_def import op_def
from flowlab.ops.sort_ops import bincount  # tf.math.bincount

__all__ = ["asinh", "acosh", "atanh", "erfc", "rint", "xlogy", "xdivy", "xlog1py",
           "divide_no_nan", "div_no_nan", "multiply_no_nan", "reduce_variance", "reduce_std",
           "reduce_euclidean_norm", "cumulative_logsumexp", "polyval", "bincount", *_gamma_all]

for _name in ("Asinh", "Acosh", "Atanh"):
    _unary(_name, FLOAT_C)
_unary("Erfc", FLOAT)
_unary("Rint", FLOAT)
for _name in ("Xlogy", "Xdivy", "Xlog1py", "DivNoNan", "MulNoNan"):
    _binary(_name, FLOAT_C)
not_differentiable("Rint")  # TensorFlow's gradient returns None
op_def("EuclideanNorm", inputs=["input: T", "reduction_indices: Tidx"], outputs=["output: T"],
       attrs=["keep_dims: bool = false", f"T: {NUMERIC}", "Tidx: {int32, int64} = int32"], shape_fn=_reduction)
op_def("CumulativeLogsumexp", inputs=["x: T", "axis: Tidx"], outputs=["out: T"],
       attrs=["exclusive: bool = false", "reverse: bool = false", f"T: {FLOAT}", "Tidx: {int32, int64} = int32"],
       shape_fn=_scan)


# --- builders -------------------------------------------------------------------------
# The same builder as math_ops' unary functions (tf.sin, ...).
_unary_builder = math_ops._unary

asinh = _unary_builder("Asinh", "asinh", "Inverse hyperbolic sine elementwise")
acosh = _unary_builder("Acosh", "acosh", "Inverse hyperbolic cosine elementwise")
atanh = _unary_builder("Atanh", "atanh", "Inverse hyperbolic tangent elementwise")
erfc = _unary_builder("Erfc", "erfc", "Complementary error function elementwise")
rint = _unary_builder("Rint", "rint", "Nearest integer, halves to even")


def _pair(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    x = convert_to_tensor(x, name="x")
    return x, convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * log(y), and 0 where x == 0 (`Xlogy`)."""
    return apply_op("Xlogy", x=x, y=y, name=name or "Xlogy")


def xdivy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y, and 0 where x == 0 (`Xdivy`)."""
    return apply_op("Xdivy", x=x, y=y, name=name or "Xdivy")


def xlog1py(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * log1p(y), and 0 where x == 0 (`Xlog1py`)."""
    return apply_op("Xlog1py", x=x, y=y, name=name or "Xlog1py")


def _scoped(op_type: str, default: str, x: Any, y: Any, name: str | None) -> Tensor:
    g = graph_of([x, y])
    with g.as_default(), g.name_scope(name or default) as scope:
        x, y = _pair(x, y)
        return apply_op(op_type, x=x, y=y, name=scope)


def divide_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y, and 0 where y == 0 (`DivNoNan`)."""
    return _scoped("DivNoNan", "div_no_nan", x, y, name)


div_no_nan = divide_no_nan


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * y, and 0 where y == 0 even if x is inf or NaN (`MulNoNan`)."""
    return _scoped("MulNoNan", "multiply_no_nan", x, y, name)


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """Mean of the squared deviations from the mean along `axis`."""
    g = graph_of([input_tensor])
    with g.as_default(), g.name_scope(name or "reduce_variance"):
        x = convert_to_tensor(input_tensor)
        means = math_ops.reduce_mean(x, axis=axis, keepdims=True)
        if means.dtype.is_integer:
            raise TypeError(f"Input must be either real or complex. Received integer type {means.dtype}.")
        diff = x - means
        if diff.dtype.is_complex:
            sq = math_ops.square(math_ops.abs(diff))
        else:
            sq = math_ops.square(diff)
        return math_ops.reduce_mean(sq, axis=axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """Square root of `reduce_variance`."""
    g = graph_of([input_tensor])
    with g.as_default(), g.name_scope(name or "reduce_std"):
        x = convert_to_tensor(input_tensor)
        return math_ops.sqrt(reduce_variance(x, axis=axis, keepdims=keepdims))


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Tensor:
    """sqrt(sum(|x| ** 2)) over `axis` (all axes when None), as one EuclideanNorm op."""
    return math_ops._reduce("EuclideanNorm", input_tensor, axis, keepdims, name, None, None)


def cumulative_logsumexp(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None) -> Tensor:
    """log(cumsum(exp(x))) along `axis`, without overflow (exclusive: starts at -inf)."""
    return apply_op("CumulativeLogsumexp", x=x, axis=axis, exclusive=exclusive, reverse=reverse,
                    name=name or "CumulativeLogsumexp")


def polyval(coeffs: Any, x: Any, name: str | None = None) -> Tensor:
    """coeffs[0] * x ** (n-1) + ... + coeffs[n-1], by Horner's rule (a list of coefficients)."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type. Received type {type(coeffs)}.")
    g = graph_of([x, *coeffs])
    with g.as_default(), g.name_scope(name or "polyval"):
        x = convert_to_tensor(x, name="x")
        if not coeffs:
            return array_ops.zeros_like(x, name=name)
        cs = [convert_to_tensor(c, name=f"coeff_{i}") for i, c in enumerate(coeffs)]
        p = cs[0]
        for c in cs[1:]:
            p = c + p * x
        return p


# --- gradients (TensorFlow's math_grad.py) --------------------------------------------
@gradient("EuclideanNorm")
def _euclidean_norm_grad(op: Operation, grad: Tensor) -> Any:
    output = op.outputs[0]
    if not op.get_attr("keep_dims"):
        kept, _ = _kept_shape(op)
        output = array_ops.reshape(output, kept)
        grad = array_ops.reshape(grad, kept)
    return [math_ops.truediv(op.inputs[0], output / grad), None]


@gradient("CumulativeLogsumexp")
def _cumulative_logsumexp_grad(op: Operation, grad: Tensor) -> Any:
    x, axis = op.inputs
    out = op.outputs[0]
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    lowest = convert_to_tensor(np.finfo(grad.dtype.as_numpy_dtype).min, dtype=grad.dtype)
    zero = convert_to_tensor(0, dtype=grad.dtype)
    # Split the incoming gradient by sign: its log exists only for one sign at a time.
    log_pos = array_ops.where_v2(math_ops.greater(grad, zero), math_ops.log(grad), lowest)
    log_neg = array_ops.where_v2(math_ops.less(grad, zero), math_ops.log(-grad), lowest)
    pos = math_ops.exp(cumulative_logsumexp(log_pos - out, axis, exclusive=exclusive, reverse=not reverse) + x)
    neg = math_ops.exp(cumulative_logsumexp(log_neg - out, axis, exclusive=exclusive, reverse=not reverse) + x)
    return [pos - neg, None]


@gradient("Asinh")
def _asinh_grad(op: Operation, grad: Tensor) -> Any:
    return [grad / math_ops.cosh(op.outputs[0])]


@gradient("Acosh")
def _acosh_grad(op: Operation, grad: Tensor) -> Any:
    return [grad / math_ops.sinh(op.outputs[0])]


@gradient("Atanh")
def _atanh_grad(op: Operation, grad: Tensor) -> Any:
    x = op.inputs[0]
    return [grad * math_ops.reciprocal(1 - math_ops.square(x))]


@gradient("Erfc")
def _erfc_grad(op: Operation, grad: Tensor) -> Any:
    x = op.inputs[0]
    minus_two_over_root_pi = convert_to_tensor(-2 / np.sqrt(np.pi), dtype=grad.dtype)
    return [grad * minus_two_over_root_pi * math_ops.exp(-math_ops.square(x))]


def _not_zero(x: Tensor) -> Tensor:
    return math_ops.cast(math_ops.not_equal(x, math_ops.cast(0, x.dtype)), x.dtype)


@gradient("Xlogy")
def _xlogy_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs
    return list(unbroadcast(op, xlogy(_not_zero(x), y) * grad, xdivy(x, y) * grad))


@gradient("Xlog1py")
def _xlog1py_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs
    return list(unbroadcast(op, xlog1py(_not_zero(x), y) * grad, xdivy(x, y + 1) * grad))


@gradient("Xdivy")
def _xdivy_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs
    return list(unbroadcast(op, xdivy(_not_zero(x), y) * grad, xdivy(-x, y ** 2) * grad))


@gradient("DivNoNan")
def _div_no_nan_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs
    return list(unbroadcast(op, divide_no_nan(grad, y), grad * divide_no_nan(divide_no_nan(-x, y), y)))


@gradient("MulNoNan")
def _mul_no_nan_grad(op: Operation, grad: Tensor) -> Any:
    x, y = op.inputs
    return list(unbroadcast(op, multiply_no_nan(grad, y), multiply_no_nan(x, grad)))

