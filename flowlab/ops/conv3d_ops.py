"""3-D convolution (`tf.nn.conv3d`) and its two gradient ops, as TensorFlow declares them.

Conv3D: input [n, d, h, w, c] (NDHWC; NCDHW is declared but, as on TensorFlow's
CPU, not computed), filter [kd, kh, kw, c, out], SAME or VALID padding, strides on the
three spatial dimensions.  Conv3DBackpropInputV2 / Conv3DBackpropFilterV2 are its
gradient and each other's (bilinear), as in TensorFlow's nn_grad.  Kernels:
flowlab.kernels.conv3d_kernels (im2col + GEMM, like Conv2D's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_value
from flowlab.ops.conv_grad import register_bilinear_gradients
from flowlab.ops.conv_ops import output_size
from flowlab.ops.op_def import op_def

__all__ = ["conv3d", "conv3d_backprop_input_v2", "conv3d_backprop_filter_v2"]

_FORMATS = ("NDHWC", "NCDHW")


def _rank5(s: Any) -> list[int | None]:
    if s.ndims is None:
        return [None] * 5
    if s.ndims != 5:
        raise ValueError(f"Shape must be rank 5 but is rank {s.ndims}")
    return s.as_list()


def _check_attrs(op: Operation) -> tuple[str, str]:
    padding = op.get_attr("padding")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Attr 'padding' of '{op.type}' Op passed string '{padding}' not in: \"SAME\", \"VALID\".")
    fmt = op.get_attr("data_format")
    if fmt not in _FORMATS:
        raise ValueError(f"Attr 'data_format' of '{op.type}' Op passed string '{fmt}' not in: \"NDHWC\", \"NCDHW\".")
    for attr in ("strides", "dilations"):
        if len(op.get_attr(attr)) != 5:
            raise ValueError(f"{attr} must be a 5-vector, got {len(op.get_attr(attr))} values")
    return padding, fmt


def _spatial(values: list[Any], fmt: str) -> list[Any]:
    return list(values[2:5]) if fmt == "NCDHW" else list(values[1:4])


def _conv3d_shape(op: Operation) -> list[Any]:
    padding, fmt = _check_attrs(op)
    x = _rank5(op.inputs[0].shape)
    f = _rank5(op.inputs[1].shape)
    n, c = (x[0], x[1]) if fmt == "NCDHW" else (x[0], x[4])
    fc, o = f[3], f[4]
    if c is not None and fc is not None and (fc == 0 or c % fc):
        raise ValueError(f"Depth of input ({c}) is not a multiple of input depth of filter ({fc})")
    sizes = _spatial(x, fmt)
    strides = _spatial(op.get_attr("strides"), fmt)
    dil = _spatial(op.get_attr("dilations"), fmt)
    out = [output_size(sizes[i], f[i], strides[i], dil[i], padding)[0] for i in range(3)]
    return [[n, o, *out] if fmt == "NCDHW" else [n, *out, o]]


def _sizes_shape(index: int) -> Any:
    def fn(op: Operation) -> list[Any]:
        _check_attrs(op)
        v = constant_value(op.inputs[index])
        if v is None:
            return [[None] * 5]
        v = [int(d) for d in np.asarray(v).reshape(-1)]
        if len(v) != 5:
            raise ValueError(f"Sizes must be a 5-vector, got {len(v)} values")
        return [v]
    return fn


_ATTRS = ["T: {float16, float32, float64}", "strides: list(int)", "padding: string",
          "data_format: string = 'NDHWC'", "dilations: list(int) = [1, 1, 1, 1, 1]"]
op_def("Conv3D", inputs=["input: T", "filter: T"], outputs=["output: T"], attrs=_ATTRS, shape_fn=_conv3d_shape,
       doc="3-D convolution (cross-correlation) of input with filter.")
op_def("Conv3DBackpropInputV2", inputs=["input_sizes: Tshape", "filter: T", "out_backprop: T"],
       outputs=["output: T"], attrs=_ATTRS + ["Tshape: {int32, int64} = int32"], shape_fn=_sizes_shape(0),
       doc="Gradient of Conv3D with respect to its input.")
op_def("Conv3DBackpropFilterV2", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
       outputs=["output: T"], attrs=_ATTRS, shape_fn=_sizes_shape(1),
       doc="Gradient of Conv3D with respect to its filter.")


def _attrs(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations")}


register_bilinear_gradients("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", _attrs)


def conv3d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,  # noqa: A002
           data_format: str = "NDHWC", dilations: Any = None, name: str | None = None,
           filters: Any = None) -> Tensor:
    """`tf.nn.conv3d`: input [n, d, h, w, c], filter [kd, kh, kw, c, out], 5-vector strides."""
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filter' and 'filters'")
    filter = filter if filter is not None else filters
    return apply_op("Conv3D", input=input, filter=filter, strides=list(strides), padding=padding,
                    data_format=data_format, dilations=[1] * 5 if dilations is None else list(dilations),
                    name=name or "Conv3D")


def conv3d_backprop_input_v2(input_sizes: Any, filter: Any, out_backprop: Any, strides: Any,  # noqa: A002
                             padding: Any, data_format: str = "NDHWC", dilations: Any = None,
                             name: str | None = None) -> Tensor:
    return apply_op("Conv3DBackpropInputV2", input_sizes=input_sizes, filter=filter, out_backprop=out_backprop,
                    strides=list(strides), padding=padding, data_format=data_format,
                    dilations=[1] * 5 if dilations is None else list(dilations),
                    name=name or "Conv3DBackpropInputV2")


def conv3d_backprop_filter_v2(input: Any, filter_sizes: Any, out_backprop: Any, strides: Any,  # noqa: A002
                              padding: Any, data_format: str = "NDHWC", dilations: Any = None,
                              name: str | None = None) -> Tensor:
    return apply_op("Conv3DBackpropFilterV2", input=input, filter_sizes=filter_sizes, out_backprop=out_backprop,
                    strides=list(strides), padding=padding, data_format=data_format,
                    dilations=[1] * 5 if dilations is None else list(dilations),
                    name=name or "Conv3DBackpropFilterV2")
