"""Grayscale morphology: `tf.nn.dilation2d` (the Dilation2D op: the max over each
window of input + filter, per channel, with strides, rates and VALID / SAME padding,
padding never chosen) and `tf.nn.erosion2d` (TensorFlow's dual: -dilation2d(-value,
reversed kernel)).  The gradients are TensorFlow's Dilation2DBackpropInput /
Dilation2DBackpropFilter ops: each output's gradient goes to the input and filter
cells of its (first) maximum.  Kernels: flowlab.kernels.morphology_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient, no_gradient_defined
from flowlab.ops.op_def import op_def

__all__ = ["dilation2d", "erosion2d"]


def window(size: int, k: int, stride: int, rate: int, padding: str) -> tuple[int, int]:
    """(output size, padding before) along one axis."""
    eff = (k - 1) * rate + 1
    if padding == "VALID":
        return (size - eff) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + eff - size, 0) // 2


def _shape(op: Operation) -> list[Any]:
    x, f = op.inputs[0].shape, op.inputs[1].shape
    if x.ndims is not None and x.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {x.ndims}")
    if f.ndims is not None and f.ndims != 3:
        raise ValueError(f"Shape must be rank 3 but is rank {f.ndims}")
    d, k = (x.as_list() if x.ndims else [None] * 4), (f.as_list() if f.ndims else [None] * 3)
    s, r, pad = op.get_attr("strides"), op.get_attr("rates"), op.get_attr("padding")
    rows = None if d[1] is None or k[0] is None else window(d[1], k[0], s[1], r[1], pad)[0]
    cols = None if d[2] is None or k[1] is None else window(d[2], k[1], s[2], r[2], pad)[0]
    return [TensorShape([d[0], rows, cols, d[3] if d[3] is not None else k[2]])]


_ATTRS = ["T: {float16, float32, float64, int32, int64, int8, int16, uint8, uint16, uint32, uint64}",
          "strides: list(int) >= 4", "rates: list(int) >= 4", "padding: string"]
op_def("Dilation2D", inputs=["input: T", "filter: T"], outputs=["output: T"], attrs=_ATTRS, shape_fn=_shape)
op_def("Dilation2DBackpropInput", inputs=["input: T", "filter: T", "out_backprop: T"], outputs=["in_backprop: T"],
       attrs=_ATTRS, shape_fn=lambda op: [op.inputs[0].shape])
op_def("Dilation2DBackpropFilter", inputs=["input: T", "filter: T", "out_backprop: T"],
       outputs=["filter_backprop: T"], attrs=_ATTRS, shape_fn=lambda op: [op.inputs[1].shape])
# No second-order gradient: TensorFlow registers none for the backprop ops (tf.gradients
# raises LookupError there), and neither does flowlab (the same LookupError).
no_gradient_defined("Dilation2DBackpropInput")
no_gradient_defined("Dilation2DBackpropFilter")


def dilation2d(input: Any, filter: Any = None, strides: Any = None, rates: Any = None,  # noqa: A002
               padding: Any = None, name: str | None = None, filters: Any = None, dilations: Any = None) -> Tensor:
    """max over (dy, dx) of input[b, y*s + dy*r, x*s + dx*r, c] + filter[dy, dx, c]."""
    filter = filter if filter is not None else filters
    rates = rates if rates is not None else dilations
    return apply_op("Dilation2D", input=convert_to_tensor(input, name="input"),
                    filter=convert_to_tensor(filter, name="filter"), strides=list(strides), rates=list(rates),
                    padding=str(padding).upper(), name=name or "Dilation2D")


def erosion2d(value: Any, kernel: Any, strides: Any, rates: Any, padding: Any, name: str | None = None) -> Tensor:
    """min over (dy, dx) of value[...] - kernel[dy, dx, c] (the dual of dilation2d)."""
    with get_default_graph().name_scope(name or "erosion2d") as scope:
        return math_ops.negative(dilation2d(math_ops.negative(value), array_ops.reverse_v2(kernel, [0, 1]),
                                            strides, rates, padding, name=scope))


@gradient("Dilation2D")
def _dilation2d_grad(op: Operation, grad: Tensor) -> Any:
    kw = dict(strides=op.get_attr("strides"), rates=op.get_attr("rates"), padding=op.get_attr("padding"))
    x, f = op.inputs
    return [apply_op("Dilation2DBackpropInput", input=x, filter=f, out_backprop=grad, **kw),
            apply_op("Dilation2DBackpropFilter", input=x, filter=f, out_backprop=grad, **kw)]
