"""Gradient functions of the convolution and pooling ops (TensorFlow's nn_grad).

Conv2D differentiates into its two backprop ops; each backprop op differentiates into
the other backprop and a Conv2D (they are bilinear).  MaxPool's gradient is
MaxPoolGrad, whose own gradient reads the incoming gradient at the windows' maxima
(MaxPoolGradGrad), and back.  AvgPool and AvgPoolGrad are linear and transpose into
each other.  The window attrs are passed on unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient, not_differentiable

__all__: list[str] = []


def _attrs(op: Operation, *names: str) -> dict[str, Any]:
    return {n: op.get_attr(n) for n in names}


def _conv_attrs(op: Operation) -> dict[str, Any]:
    return _attrs(op, "strides", "padding", "explicit_paddings", "use_cudnn_on_gpu",
                  "data_format", "dilations")


def _shape(t: Tensor) -> Tensor:
    return array_ops.shape(t)


def register_bilinear_gradients(forward: str, backprop_input: str, backprop_filter: str,
                                attrs: Callable[[Operation], dict[str, Any]], shape_n: bool = True) -> None:
    """Gradients of a convolution family (Conv2D, Conv3D, DepthwiseConv2dNative): the
    forward op differentiates into its two backprop ops, and each backprop op (bilinear
    in filter and out_backprop) into the other backprop op and the forward op.  The
    window attrs pass on unchanged; `shape_n`: the forward gradient reads both shapes
    through one ShapeN (TensorFlow's Conv2D/Conv3D) or two Shapes (depthwise)."""

    def forward_grad(op: Operation, grad: Tensor) -> list[Tensor]:
        x, f = op.inputs
        sx, sf = array_ops.shape_n([x, f]) if shape_n else (_shape(x), _shape(f))
        return [
            apply_op(backprop_input, input_sizes=sx, filter=f, out_backprop=grad, name=backprop_input,
                     **attrs(op)),
            apply_op(backprop_filter, input=x, filter_sizes=sf, out_backprop=grad, name=backprop_filter,
                     **attrs(op)),
        ]

    def input_grad(op: Operation, grad: Tensor) -> list[Any]:
        _, f, dy = op.inputs
        return [
            None,
            apply_op(backprop_filter, input=grad, filter_sizes=_shape(f), out_backprop=dy,
                     name=backprop_filter, **attrs(op)),
            apply_op(forward, input=grad, filter=f, name=forward, **attrs(op)),
        ]

    def filter_grad(op: Operation, grad: Tensor) -> list[Any]:
        x, _, dy = op.inputs
        return [
            apply_op(backprop_input, input_sizes=_shape(x), filter=grad, out_backprop=dy,
                     name=backprop_input, **attrs(op)),
            None,
            apply_op(forward, input=x, filter=grad, name=forward, **attrs(op)),
        ]

    gradient(forward)(forward_grad)
    gradient(backprop_input)(input_grad)
    gradient(backprop_filter)(filter_grad)


register_bilinear_gradients("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", _conv_attrs)


def _pool_attrs(op: Operation) -> dict[str, Any]:
    return _attrs(op, "ksize", "strides", "padding", "data_format")


@gradient("MaxPool")
def _max_pool_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [apply_op("MaxPoolGrad", orig_input=op.inputs[0], orig_output=op.outputs[0],
                     grad=grad, explicit_paddings=op.get_attr("explicit_paddings"),
                     name="MaxPoolGrad", **_pool_attrs(op))]


@gradient("MaxPoolGrad")
def _max_pool_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    if op.get_attr("padding") == "EXPLICIT":
        raise LookupError("The gradient of MaxPoolGrad with explicit padding is not supported")
    return [
        array_ops.zeros_like(x), array_ops.zeros_like(y),
        apply_op("MaxPoolGradGrad", orig_input=x, orig_output=y, grad=grad,
                 name="MaxPoolGradGrad", **_pool_attrs(op)),
    ]


@gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [
        array_ops.zeros_like(x), array_ops.zeros_like(y),
        apply_op("MaxPoolGrad", orig_input=x, orig_output=y, grad=grad, name="MaxPoolGrad",
                 **_pool_attrs(op)),
    ]


@gradient("AvgPool")
def _avg_pool_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [apply_op("AvgPoolGrad", orig_input_shape=_shape(op.inputs[0]), grad=grad,
                     name="AvgPoolGrad", **_pool_attrs(op))]


@gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [None, apply_op("AvgPool", value=grad, name="AvgPool", **_pool_attrs(op))]


@gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op: Operation, grad: Tensor, _: Any) -> list[Tensor]:
    return [apply_op("MaxPoolGradWithArgmax", input=op.inputs[0], grad=grad, argmax=op.outputs[1],
                     name="MaxPoolGradWithArgmax",
                     **_attrs(op, "ksize", "strides", "padding", "include_batch_in_index"))]


not_differentiable("MaxPoolGradWithArgmax")  # TensorFlow registers no gradient for it either
