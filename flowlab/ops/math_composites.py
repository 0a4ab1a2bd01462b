"""`tf.math` functions TensorFlow composes from other ops, built the same way:
`lbeta` (log of the multivariate beta function over the last axis, from Lgamma),
`reciprocal_no_nan` (DivNoNan(1, x)), `zero_fraction` (the share of zeros, float32; also
tf.nn) and `accumulate_n` (add_n with TensorFlow's checks).  Gradients come from the ops
they are made of."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, core_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gamma_ops import lgamma

__all__ = ["lbeta", "reciprocal_no_nan", "zero_fraction", "accumulate_n"]


def lbeta(x: Any, name: str | None = None) -> Tensor:
    """log(|Beta(x)|) over the last dimension: sum(lgamma(x)) - lgamma(sum(x)).

    >>> tf.math.lbeta([1.0, 1.0])   # log(Beta(1, 1)) = 0
    """
    with get_default_graph().name_scope(name or "lbeta"):
        x = convert_to_tensor(x, name="x")
        log_prod_gamma_x = math_ops.reduce_sum(lgamma(x), axis=[-1])
        sum_x = math_ops.reduce_sum(x, axis=[-1])
        return log_prod_gamma_x - lgamma(sum_x)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """1 / x, and 0 where x == 0.

    Raises:
      TypeError: when x is not a floating or complex tensor.
    """
    with get_default_graph().name_scope(name or "reciprocal_no_nan") as scope:
        x = convert_to_tensor(x, name="x")
        dt = x.dtype.base_dtype
        if not (dt.is_floating or dt.is_complex):
            raise TypeError(f"x needs to be a floating point tensor, got {dt.name}")
        one = convert_to_tensor(1, dtype=dt, name="one")
        return apply_op("DivNoNan", x=one, y=x, name=scope)


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of zeros in `value`, as a float32 scalar (TensorFlow counts in int64,
    with an int32 count below 2**31 elements; the value is the same)."""
    g = get_default_graph()
    with g.name_scope(name or "zero_fraction"):
        value = convert_to_tensor(value, name="value")
        size = array_ops.size(value, out_type=dtypes.int64)
        with g.name_scope("count_nonzero"):
            zero = array_ops.zeros([], dtype=value.dtype.base_dtype)
            nonzero = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(value, zero), dtypes.int64),
                                          name="nonzero_count")
        with g.name_scope("counts_to_fraction"):
            num_zero = math_ops.cast(size - nonzero, dtypes.float32)
            fraction = num_zero / math_ops.cast(size, dtypes.float32)
        return core_ops.identity(fraction, name="fraction")


def accumulate_n(inputs: Any, shape: Any = None, tensor_dtype: Any = None, name: str | None = None) -> Tensor:
    """The elementwise sum of the same-shaped, same-dtype tensors `inputs` (AddN)."""
    def _input_error() -> ValueError:
        return ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")

    if not inputs or not isinstance(inputs, (list, tuple)):
        raise _input_error()
    inputs = [convert_to_tensor(x) for x in inputs]
    if not all(x.dtype == inputs[0].dtype for x in inputs):
        raise _input_error()
    s = TensorShape(shape) if shape is not None else TensorShape(None)
    for t in inputs:
        s = s.merge_with(t.shape)
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError(f"The `tensor_dtype` argument is {dtypes.as_dtype(tensor_dtype)}, but `input` is of type "
                        f"{inputs[0].dtype}. These must be equal. Try casting the input to the desired type.")
    if len(inputs) == 1:
        return inputs[0] if name is None else core_ops.identity(inputs[0], name=name)
    return math_ops.add_n(inputs, name=name)
