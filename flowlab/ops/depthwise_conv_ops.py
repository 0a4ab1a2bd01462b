"""Depthwise and separable convolutions (`tf.nn.depthwise_conv2d`, `separable_conv2d`).

DepthwiseConv2dNative convolves each input channel with its own `channel_multiplier`
filters: input [n, h, w, c], filter [kh, kw, c, m], output [n, oh, ow, c * m] (output
channel c*m + k comes from channel c and filter k).  Its two backprop ops are its
gradient, as in TensorFlow's nn_grad.  The kernels are in
flowlab.kernels.depthwise_kernels.

The builders are TensorFlow 1.x's: `depthwise_conv2d` and `separable_conv2d` run the
native op through `with_space_to_batch`, so a `rate` (or `dilations`) above 1 becomes
SpaceToBatchND -> VALID depthwise conv -> BatchToSpaceND; `separable_conv2d` follows
with a 1x1 Conv2D named after its scope.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.conv_grad import register_bilinear_gradients
from flowlab.ops.conv_ops import (
    _nhwc_to,
    _padding,
    _rank4,
    _sizes_shape,
    _windowed,
    conv2d,
    spatial,
)
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.op_def import op_def
from flowlab.ops.space_to_batch_ops import with_space_to_batch

__all__ = [
    "depthwise_conv2d", "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_input",
    "depthwise_conv2d_native_backprop_filter", "separable_conv2d",
    "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
]


def _depthwise_shape(op: Operation) -> list[Any]:
    x = _rank4(op.inputs[0].shape)
    f = _rank4(op.inputs[1].shape)
    fmt = op.get_attr("data_format")
    n, c = (x[0], x[1]) if fmt == "NCHW" else (x[0], x[3])
    kh, kw, fc, m = f
    if c is not None and fc is not None and c != fc:
        raise ValueError(f"Dimensions must be equal, but are {c} and {fc}")
    c = c if c is not None else fc
    oh, ow = _windowed(op, x, kh, kw, spatial(op.get_attr("dilations"), fmt))
    out_c = None if c is None or m is None else c * m
    return [_nhwc_to(fmt, n, oh, ow, out_c)]


_ATTRS = [
    "T: {float16, float32, float64}", "strides: list(int)", "padding: string",
    "explicit_paddings: list(int) = []", "data_format: string = 'NHWC'", "dilations: list(int) = [1, 1, 1, 1]",
]
op_def("DepthwiseConv2dNative", inputs=["input: T", "filter: T"], outputs=["output: T"], attrs=_ATTRS,
       shape_fn=_depthwise_shape, doc="Depthwise 2-D convolution: each channel with its own filters.")
op_def("DepthwiseConv2dNativeBackpropInput", inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
       outputs=["output: T"], attrs=_ATTRS, shape_fn=lambda op: _sizes_shape(op, 0),
       doc="Gradient of DepthwiseConv2dNative with respect to its input.")
op_def("DepthwiseConv2dNativeBackpropFilter", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
       outputs=["output: T"], attrs=_ATTRS, shape_fn=lambda op: _sizes_shape(op, 1),
       doc="Gradient of DepthwiseConv2dNative with respect to its filter.")


def _attrs(op: Operation) -> dict[str, Any]:
    return {n: op.get_attr(n) for n in ("strides", "padding", "explicit_paddings", "data_format", "dilations")}


register_bilinear_gradients("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                            "DepthwiseConv2dNativeBackpropFilter", _attrs, shape_n=False)


def _native(op_type: str, name: str | None, strides: Any, padding: Any, data_format: str | None,
            dilations: Any, **inputs: Any) -> Tensor:
    fmt = data_format or "NHWC"
    pad, explicit = _padding(padding, fmt)
    return apply_op(op_type, strides=list(strides), padding=pad, explicit_paddings=explicit, data_format=fmt,
                    dilations=[1, 1, 1, 1] if dilations is None else list(dilations), name=name or op_type,
                    **inputs)


def depthwise_conv2d_native(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                            data_format: str | None = "NHWC", dilations: Any = None,
                            name: str | None = None) -> Tensor:
    """The DepthwiseConv2dNative op (strides and dilations are 4-lists)."""
    return _native("DepthwiseConv2dNative", name, strides, padding, data_format, dilations, input=input,
                   filter=filter)


def depthwise_conv2d_native_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any, strides: Any,
                                           padding: Any, data_format: str | None = "NHWC", dilations: Any = None,
                                           name: str | None = None) -> Tensor:
    return _native("DepthwiseConv2dNativeBackpropInput", name, strides, padding, data_format, dilations,
                   input_sizes=input_sizes, filter=filter, out_backprop=out_backprop)


def depthwise_conv2d_native_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                            strides: Any, padding: Any, data_format: str | None = "NHWC",
                                            dilations: Any = None, name: str | None = None) -> Tensor:
    return _native("DepthwiseConv2dNativeBackpropFilter", name, strides, padding, data_format, dilations,
                   input=input, filter_sizes=filter_sizes, out_backprop=out_backprop)


def _rate(rate: Any, dilations: Any) -> list[int]:
    if rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilations' and 'rate'")
    r = dilations if dilations is not None else rate
    if r is None:
        return [1, 1]
    r = [int(v) for v in np.asarray(r).reshape(-1)]
    return r * 2 if len(r) == 1 else r


def _check_rate_strides(rate: list[int], strides: Any) -> None:
    if any(v > 1 for v in rate) and any(int(s) > 1 for s in strides):
        raise ValueError(f"strides > window_strides not supported: dilation_rate {rate} with strides {list(strides)}")


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any, rate: Any = None,  # noqa: A002
                     name: str | None = None, data_format: str | None = None, dilations: Any = None) -> Tensor:
    """`tf.nn.depthwise_conv2d`: input [n, h, w, c] with filter [kh, kw, c, m] -> [n, oh, ow, c*m];
    `rate` dilates the filter (through SpaceToBatchND, as TensorFlow does)."""
    r = _rate(rate, dilations)
    with _name_scope(name, "depthwise", [input, filter]) as scope:
        input = convert_to_tensor(input, name="tensor_in")
        filter = convert_to_tensor(filter, name="filter_in")
        _check_rate_strides(r, strides)

        def op(x: Tensor, _: int, pad: Any) -> Tensor:
            return depthwise_conv2d_native(x, filter, strides, pad, data_format=data_format, name=scope)

        return _through_space_to_batch(input, filter, r, padding, data_format, op)


def _through_space_to_batch(input: Tensor, filter: Tensor, rate: list[int], padding: Any,  # noqa: A002
                            data_format: str | None, op: Any) -> Tensor:
    """TensorFlow's with_space_to_batch prologue: the filter's shape and the rate as
    constants ("Shape", "dilation_rate"), then the op, dilated or not."""
    fshape = filter.shape.as_list() if filter.shape.ndims is not None else None
    array_ops.shape(filter)
    convert_to_tensor(np.asarray(rate, np.int32), name="dilation_rate")
    if all(v == 1 for v in rate):
        return op(input, 2, padding)
    if data_format not in (None, "NHWC"):
        raise NotImplementedError("a rate above 1 is supported for NHWC data only")
    if fshape is None or None in fshape[:2]:
        raise NotImplementedError("a rate above 1 needs the filter's spatial size when the graph is built")
    return with_space_to_batch(input, rate, padding, op, filter_shape=fshape)


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any, strides: Any,  # noqa: A002
                     padding: Any, rate: Any = None, name: str | None = None, data_format: str | None = None,
                     dilations: Any = None) -> Tensor:
    """`tf.nn.separable_conv2d`: a depthwise conv ([kh, kw, c, m]) then a 1x1 conv
    ([1, 1, c*m, out]) named after the scope."""
    r = _rate(rate, dilations)
    with _name_scope(name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]) as scope:
        input = convert_to_tensor(input, name="tensor_in")
        depthwise_filter = convert_to_tensor(depthwise_filter, name="depthwise_filter")
        pointwise_filter = convert_to_tensor(pointwise_filter, name="pointwise_filter")
        ps = pointwise_filter.shape
        if ps.ndims is not None:
            if ps.ndims != 4:
                raise ValueError(f"Shape {ps} must have rank 4")
            for d in ps.as_list()[:2]:
                if d is not None and d != 1:
                    raise ValueError(f"Dimensions {d} and 1 are not compatible")
        _check_rate_strides(r, strides)

        def op(x: Tensor, _: int, pad: Any) -> Tensor:
            return depthwise_conv2d_native(x, depthwise_filter, strides, pad, data_format=data_format,
                                           name="depthwise")

        depthwise = _through_space_to_batch(input, depthwise_filter, r, padding, data_format, op)
        return conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], padding="VALID",
                      data_format=data_format or "NHWC", name=scope)


# TensorFlow exports the native backprops under these names too (tf.nn).
depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter
