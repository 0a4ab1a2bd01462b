"""`tf.nn.sufficient_statistics`, `normalize_moments` and `weighted_moments`: moments
built from reductions as TensorFlow 1.x builds them (same scopes and op names), for
programs that compute batch statistics by hand or with per-example frequency weights.
`moments` itself lives in `nn_impl`."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, constant_op, math_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.nn_ops import _axis_arg, _name_scope
from flowlab.ops.special_math_ops import div_no_nan

__all__ = ["sufficient_statistics", "normalize_moments", "weighted_moments"]


def sufficient_statistics(
    x: Any, axes: Any, shift: Any = None, keep_dims: Any = None, name: str | None = None,
    keepdims: Any = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """(count, sum of x - shift, sum of (x - shift)^2, shift) over `axes`; the count is a
    constant when those dims are known, else the product of the runtime dims."""
    axes = list(set(axes))
    keep = bool(_axis_arg(keepdims, keep_dims, "keepdims", "keep_dims"))
    with _name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        shape = x.shape
        if shape.rank is not None and all(shape.dims[d].value is not None for d in axes):
            count = 1
            for d in axes:
                count *= shape.dims[d].value
            counts = constant_op.constant(count, dtype=x.dtype)
        else:
            rank = array_ops.rank(x)
            positive = [a + rank if a < 0 else a for a in axes]
            dims = array_ops.gather(math_ops.cast(array_ops.shape(x), x.dtype), positive)
            counts = math_ops.reduce_prod(dims, name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift")
            m_ss, v_ss = math_ops.subtract(x, shift), math_ops.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, math_ops.square(x)
        m_ss = math_ops.reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
        v_ss = math_ops.reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
    return counts, m_ss, v_ss, shift


def normalize_moments(
    counts: Any, mean_ss: Any, variance_ss: Any, shift: Any, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """(mean, variance) from `sufficient_statistics`' sums: variance = E[d^2] - E[d]^2."""
    with _name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = math_ops.reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math_ops.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = math_ops.subtract(
            math_ops.multiply(variance_ss, divisor), math_ops.square(shifted_mean), name="variance"
        )
    return mean, variance


def weighted_moments(
    x: Any, axes: Any, frequency_weights: Any, name: str | None = None, keep_dims: Any = None,
    keepdims: Any = None,
) -> tuple[Tensor, Tensor]:
    """Frequency-weighted (mean, variance) over `axes`, two passes; a zero total weight
    gives 0 (div_no_nan).  float16 is computed in float32 and cast back."""
    keep = bool(_axis_arg(keepdims, keep_dims, "keepdims", "keep_dims"))
    with _name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        frequency_weights = convert_to_tensor(frequency_weights, name="frequency_weights")
        half = x.dtype.base_dtype is dtypes.float16
        if half:
            x = math_ops.cast(x, dtypes.float32)
        if frequency_weights.dtype != x.dtype:
            frequency_weights = math_ops.cast(frequency_weights, x.dtype)
        # keepdims=True throughout so the mean broadcasts against x
        weighted_sum = math_ops.reduce_sum(frequency_weights * x, axes, name="weighted_input_sum", keepdims=True)
        # the weights need only broadcast with x: spread them to x's shape to count them
        spread = frequency_weights + array_ops.zeros_like(x)
        total = math_ops.reduce_sum(spread, axes, name="sum_of_weights", keepdims=True)
        mean = div_no_nan(weighted_sum, total)
        distsq = math_ops.reduce_sum(
            frequency_weights * math_ops.squared_difference(x, mean), axes, name="weighted_distsq", keepdims=True
        )
        variance = div_no_nan(distsq, total)
        if not keep:
            mean = array_ops.squeeze(mean, axis=axes)
            variance = array_ops.squeeze(variance, axis=axes)
        if half:
            mean = math_ops.cast(mean, dtypes.float16)
            variance = math_ops.cast(variance, dtypes.float16)
        return mean, variance
