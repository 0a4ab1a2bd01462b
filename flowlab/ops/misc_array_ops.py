"""Small array builders of TensorFlow 1.x with their own op or composite:
`guarantee_const` (GuaranteeConst: the input, promised constant; no gradient, as in
TensorFlow), `parallel_stack` (ParallelConcat of the expanded inputs: tf.stack's values,
shapes known up front, not differentiable), `histogram_fixed_width_bins` (TensorFlow's
composite: the bin index of each value, outliers clipped into the end bins) and
`grad_pass_through` (f's value with the identity as its gradient)."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import no_gradient_defined, not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["guarantee_const", "parallel_stack", "histogram_fixed_width_bins", "grad_pass_through"]

op_def("GuaranteeConst", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
       shape_fn=lambda op: [op.inputs[0].shape])
no_gradient_defined("GuaranteeConst")  # TensorFlow registers none: a gradient through it is a LookupError


def _parallel_concat_shape(op: Operation) -> list[Any]:
    return [TensorShape(op.get_attr("shape"))]


op_def("ParallelConcat", inputs=["values: N * T"], outputs=["output: T"],
       attrs=["N: int >= 1", "T: type", "shape: shape"], shape_fn=_parallel_concat_shape)
not_differentiable("ParallelConcat")


def guarantee_const(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`input`, with the promise that it does not change between runs."""
    return apply_op("GuaranteeConst", input=convert_to_tensor(input, name="input"), name=name or "GuaranteeConst")


def parallel_stack(values: Any, name: str = "parallel_stack") -> Tensor:
    """tf.stack(values) along a new first axis, as one ParallelConcat op (every value
    must have the same, fully known shape)."""
    with get_default_graph().name_scope(name):
        ts = [convert_to_tensor(v) for v in values]
        first = ts[0].shape
        if not first.is_fully_defined():
            raise ValueError(f"All input shapes must be fully defined. Received: {first}")
        out_shape = TensorShape([len(ts)]).concatenate(first)
        expanded = [array_ops.expand_dims(t, 0) for t in ts]
        return apply_op("ParallelConcat", values=expanded, shape=out_shape, name="ParallelConcat")


def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: Any = 100, dtype: Any = dtypes.int32,
                               name: str | None = None) -> Tensor:
    """The bin (0 .. nbins-1) of each value over `value_range` split into nbins equal bins."""
    from flowlab.ops.check_ops import Assert
    from flowlab.ops.core_ops import with_dependencies

    with get_default_graph().name_scope(name or "histogram_fixed_width_bins"):
        values = convert_to_tensor(values, name="values")
        shape = array_ops.shape(values)
        values = array_ops.reshape(values, [-1])
        value_range = convert_to_tensor(value_range, name="value_range")
        nbins_t = convert_to_tensor(nbins, dtype=dtypes.int32, name="nbins")
        check = Assert(math_ops.greater(nbins_t, 0), [f"nbins {nbins_t} must > 0"])
        nbins_t = with_dependencies([check], nbins_t)
        nbins_float = math_ops.cast(nbins_t, values.dtype.base_dtype)
        scaled = math_ops.truediv(values - value_range[0], value_range[1] - value_range[0], name="scaled_values")
        indices = math_ops.floor(nbins_float * scaled, name="indices")
        indices = math_ops.cast(math_ops.clip_by_value(indices, 0, nbins_float - 1), dtypes.int32)
        return array_ops.reshape(indices, shape)


def grad_pass_through(f: Any) -> Any:
    """A function computing f(*args) whose gradient with respect to each arg is the
    incoming gradient (a straight-through estimator)."""
    from flowlab.ops.custom_gradient import custom_gradient

    @custom_gradient
    def _grad_pass_through_op(*args: Any, **kwargs: Any) -> Any:
        def grad(*grad_ys: Any) -> Any:
            return grad_ys[0] if len(grad_ys) == 1 else grad_ys
        return f(*args, **kwargs), grad

    return _grad_pass_through_op
