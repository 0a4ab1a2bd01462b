"""Convolution and pooling ops (`tf.nn.conv2d`, `tf.nn.max_pool`, `tf.nn.avg_pool`, ...).

Declared here with TensorFlow's op types, attrs and shape functions: Conv2D (NHWC and
NCHW, SAME/VALID/EXPLICIT padding, strides, dilations, grouped when the input depth is
a multiple of the filter's), its two backprops (Conv2DBackpropInput, which is also
`tf.nn.conv2d_transpose`, and Conv2DBackpropFilter), MaxPool, AvgPool and their
gradient ops (MaxPoolGrad, AvgPoolGrad, MaxPoolGradGrad).  The CPU kernels live in
`flowlab.kernels.conv_kernels` (im2col and one GEMM) and `flowlab.kernels.pool_kernels`,
the gradient functions in `flowlab.ops.conv_grad`.

The builders follow TensorFlow 1.x: strides, ksize and dilations may be an int or a
list of 1, 2 or 4 ints (placed on the spatial dimensions of the data format), padding
is "SAME", "VALID" or an explicit list of (before, after) pairs, default op names are
the op types ("Conv2D", "MaxPool") and `conv2d_transpose` names its op after its scope.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.op_def import op_def

__all__ = [
    "conv1d", "conv2d", "conv2d_transpose", "conv2d_backprop_input", "conv2d_backprop_filter",
    "max_pool", "avg_pool", "max_pool_with_argmax",
]

_PADDINGS = ("SAME", "VALID", "EXPLICIT")
_FORMATS = ("NHWC", "NCHW")


# --- geometry shared with the kernels -------------------------------------------------
def spatial(values: list[int], data_format: str) -> tuple[int, int]:
    """The (height, width) entries of a 4-vector attr laid out in `data_format`."""
    return (values[2], values[3]) if data_format == "NCHW" else (values[1], values[2])


def explicit_pads(flat: list[int], data_format: str) -> tuple[tuple[int, int], tuple[int, int]]:
    pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(4)]
    h, w = (2, 3) if data_format == "NCHW" else (1, 2)
    return pairs[h], pairs[w]


def output_size(size: int | None, k: int | None, stride: int, dilation: int, padding: str,
                pads: tuple[int, int] = (0, 0)) -> tuple[int | None, int, int]:
    """(output size, pad before, pad after) of one spatial dimension, as TensorFlow's
    GetWindowedOutputSize; unknown sizes give None and zero pads."""
    if size is None or k is None:
        return None, 0, 0
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        if size < eff:
            raise ValueError(f"Negative dimension size caused by subtracting {eff} from {size}")
        return (size - eff) // stride + 1, 0, 0
    if padding == "SAME":
        out = -(-size // stride)
        need = max((out - 1) * stride + eff - size, 0)
        return out, need // 2, need - need // 2
    before, after = pads
    padded = size + before + after
    if padded < eff:
        raise ValueError(f"Negative dimension size caused by subtracting {eff} from {padded}")
    return (padded - eff) // stride + 1, before, after


# --- shape functions ------------------------------------------------------------------
def _rank4(s: TensorShape) -> list[int | None]:
    if s.ndims is None:
        return [None] * 4
    if s.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {s.ndims}")
    return s.as_list()


def _check_padding(op: Operation) -> str:
    padding = op.get_attr("padding")
    if isinstance(padding, bytes):
        padding = padding.decode()
    explicit_ok = "explicit_paddings" in op.op_def.attrs
    if padding not in (_PADDINGS if explicit_ok else _PADDINGS[:2]):
        allowed = '"SAME", "VALID", "EXPLICIT"' if explicit_ok else '"SAME", "VALID"'
        raise ValueError(f"Attr 'padding' of '{op.type}' Op passed string '{padding}' not in: "
                         f"{allowed}.")
    fmt = op.get_attr("data_format")
    if fmt not in _FORMATS:
        raise ValueError(f"Attr 'data_format' of '{op.type}' Op passed string '{fmt}' not in: "
                         '"NHWC", "NCHW".')
    for attr in ("strides", "ksize", "dilations"):
        if attr in op.op_def.attrs and len(op.get_attr(attr)) != 4:
            field = {"ksize": "window size", "strides": "strides", "dilations": "dilations"}[attr]
            raise ValueError(f"Sliding window {field} field must specify 4 dimensions")
    if padding == "EXPLICIT" and len(op.get_attr("explicit_paddings")) != 8:
        raise ValueError("explicit_paddings must contain 8 values, "
                         f"got {len(op.get_attr('explicit_paddings'))}")
    return padding


def _windowed(op: Operation, dims: list[int | None], kh: int | None, kw: int | None,
              dilations: tuple[int, int]) -> tuple[int | None, int | None]:
    fmt = op.get_attr("data_format")
    padding = _check_padding(op)
    sh, sw = spatial(op.get_attr("strides"), fmt)
    h, w = spatial(dims, fmt)  # type: ignore[arg-type]
    ph, pw = ((0, 0), (0, 0))
    if padding == "EXPLICIT":
        ph, pw = explicit_pads(op.get_attr("explicit_paddings"), fmt)
    oh = output_size(h, kh, sh, dilations[0], padding, ph)[0]
    ow = output_size(w, kw, sw, dilations[1], padding, pw)[0]
    return oh, ow


def _nhwc_to(fmt: str, n: Any, h: Any, w: Any, c: Any) -> list[Any]:
    return [n, c, h, w] if fmt == "NCHW" else [n, h, w, c]


def _conv_shape(op: Operation) -> list[Any]:
    x = _rank4(op.inputs[0].shape)
    f = _rank4(op.inputs[1].shape)
    fmt = op.get_attr("data_format")
    _check_padding(op)
    n, c = (x[0], x[1]) if fmt == "NCHW" else (x[0], x[3])
    kh, kw, fc, o = f
    if c is not None and fc is not None and (fc == 0 or c % fc):
        raise ValueError(f"Depth of input ({c}) is not a multiple of input depth of filter ({fc})")
    if o is not None and c is not None and fc and o % (c // fc):
        raise ValueError(f"Depth of output ({o}) is not a multiple of the number of groups "
                         f"({c // fc})")
    oh, ow = _windowed(op, x, kh, kw, spatial(op.get_attr("dilations"), fmt))
    return [_nhwc_to(fmt, n, oh, ow, o)]


def _sizes_shape(op: Operation, index: int) -> list[Any]:
    s = op.inputs[index].shape
    if s.ndims is not None and s.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.ndims}")
    _check_padding(op)
    v = constant_value(op.inputs[index])
    if v is None:
        return [[None] * 4]
    v = [int(d) for d in np.asarray(v).reshape(-1)]
    if len(v) != 4:
        raise ValueError(f"Sizes must be a 4-vector, got {len(v)} values")
    return [v]


def _pool_shape(op: Operation) -> list[Any]:
    x = _rank4(op.inputs[0].shape)
    fmt = op.get_attr("data_format")
    _check_padding(op)
    kh, kw = spatial(op.get_attr("ksize"), fmt)
    n, c = (x[0], x[1]) if fmt == "NCHW" else (x[0], x[3])
    oh, ow = _windowed(op, x, kh, kw, (1, 1))
    return [_nhwc_to(fmt, n, oh, ow, c)]


def _first_shape(op: Operation) -> list[Any]:
    return [op.inputs[0].shape.merge_with(TensorShape(_rank4(op.inputs[0].shape)))]


def _grad_grad_shape(op: Operation) -> list[Any]:
    return [TensorShape(_rank4(op.inputs[1].shape))]


# --- declarations ----------------------------------------------------------------------
_CONV_T = "T: {float16, float32, float64, int32}"
_CONV_ATTRS = [
    _CONV_T, "strides: list(int)", "use_cudnn_on_gpu: bool = true", "padding: string",
    "explicit_paddings: list(int) = []", "data_format: string = 'NHWC'",
    "dilations: list(int) = [1, 1, 1, 1]",
]
_POOL_ATTRS = [
    "ksize: list(int)", "strides: list(int)", "padding: string",
    "data_format: string = 'NHWC'",
]
_MAX_T = "T: {float16, float32, float64, int32, int64, uint8, int16, int8, uint16} = float32"
_AVG_T = "T: {float16, float32, float64}"

op_def("Conv2D", inputs=["input: T", "filter: T"], outputs=["output: T"], attrs=_CONV_ATTRS,
       shape_fn=_conv_shape, doc="2-D convolution (cross-correlation) of input with filter.")
op_def("Conv2DBackpropInput", inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
       outputs=["output: T"], attrs=_CONV_ATTRS, shape_fn=lambda op: _sizes_shape(op, 0),
       doc="Gradient of Conv2D with respect to its input (the transposed convolution).")
op_def("Conv2DBackpropFilter", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
       outputs=["output: T"], attrs=_CONV_ATTRS, shape_fn=lambda op: _sizes_shape(op, 1),
       doc="Gradient of Conv2D with respect to its filter.")
op_def("MaxPool", inputs=["input: T"], outputs=["output: T"],
       attrs=[_MAX_T] + _POOL_ATTRS[:3] + ["explicit_paddings: list(int) = []"] + _POOL_ATTRS[3:],
       shape_fn=_pool_shape, doc="Maximum over each window.")
op_def("AvgPool", inputs=["value: T"], outputs=["output: T"], attrs=[_AVG_T] + _POOL_ATTRS,
       shape_fn=_pool_shape, doc="Mean over the non-padding elements of each window.")
op_def("MaxPoolGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"], outputs=["output: T"],
       attrs=[_MAX_T] + _POOL_ATTRS[:3] + ["explicit_paddings: list(int) = []"] + _POOL_ATTRS[3:],
       shape_fn=_first_shape,
       doc="Gradient of MaxPool: each window's gradient goes to its (first) maximum.")
op_def("AvgPoolGrad", inputs=["orig_input_shape: int32", "grad: T"], outputs=["output: T"],
       attrs=[_AVG_T] + _POOL_ATTRS, shape_fn=lambda op: _sizes_shape(op, 0),
       doc="Gradient of AvgPool: each window's gradient spread evenly over its elements.")
op_def("MaxPoolGradGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"],
       outputs=["output: T"],
       attrs=["T: {float16, float32, float64, int32, int64, uint8, int16, int8, uint16}"]
       + _POOL_ATTRS, shape_fn=_grad_grad_shape,
       doc="Gradient of MaxPoolGrad: grad (input-shaped) read at each window's maximum.")

_ARGMAX_ATTRS = ["ksize: list(int)", "strides: list(int)", "Targmax: {int32, int64} = int64", "padding: string",
                 "include_batch_in_index: bool = false",
                 "T: {float16, float32, float64, int32, int64, uint8, int16, int8, uint16}"]


def _argmax_pool_shape(op: Operation) -> list[Any]:
    if op.get_attr("padding") not in _PADDINGS[:2]:
        raise ValueError(f"Attr 'padding' of '{op.type}' Op passed string '{op.get_attr('padding')}' not in: "
                         '"SAME", "VALID".')
    for attr in ("ksize", "strides"):
        if len(op.get_attr(attr)) != 4:
            field = "window size" if attr == "ksize" else "strides"
            raise ValueError(f"Sliding window {field} field must specify 4 dimensions")
    x = _rank4(op.inputs[0].shape)
    kh, kw = spatial(op.get_attr("ksize"), "NHWC")
    sh, sw = spatial(op.get_attr("strides"), "NHWC")
    pad = op.get_attr("padding")
    oh = output_size(x[1], kh, sh, 1, pad)[0]
    ow = output_size(x[2], kw, sw, 1, pad)[0]
    return [[x[0], oh, ow, x[3]]] * 2


op_def("MaxPoolWithArgmax", inputs=["input: T"], outputs=["output: T", "argmax: Targmax"], attrs=_ARGMAX_ATTRS,
       shape_fn=_argmax_pool_shape,
       doc="MaxPool (NHWC) and the flat index of each window's (first) maximum.")
op_def("MaxPoolGradWithArgmax", inputs=["input: T", "grad: T", "argmax: Targmax"], outputs=["output: T"],
       attrs=_ARGMAX_ATTRS, shape_fn=_first_shape,
       doc="Gradient of MaxPoolWithArgmax: each grad element added at its argmax.")


# --- builders --------------------------------------------------------------------------
def _sequence(value: Any, name: str, data_format: str) -> list[int]:
    """TensorFlow's _get_sequence for 2 spatial dims: int or 1/2/4-list -> 4-list."""
    if value is None:
        return [1, 1, 1, 1]
    if isinstance(value, (int, np.integer)):
        value = [int(value)]
    value = [int(v) for v in value]
    if len(value) == 1:
        value = value * 2
    if len(value) == 2:
        return [1, 1] + value if data_format.startswith("NC") else [1] + value + [1]
    if len(value) == 4:
        return value
    raise ValueError(f"{name} should be of length 1, 2 or 4. Received: {name}={value} of "
                     f"length {len(value)}")


def _padding(padding: Any, data_format: str) -> tuple[str, list[int]]:
    if isinstance(padding, str):
        return padding.upper() if padding.upper() in _PADDINGS[:2] else padding, []
    pairs = [list(p) for p in padding]
    if len(pairs) != 4 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"When padding is a list, it must have 4 (before, after) pairs, got {padding}")
    batch, channel = (0, 1) if data_format == "NCHW" else (0, 3)
    if pairs[batch] != [0, 0] or pairs[channel] != [0, 0]:
        raise ValueError(f'"padding" may not have a nonzero value in the batch or channel '
                         f"dimension. Received: padding={padding}")
    return "EXPLICIT", [int(v) for p in pairs for v in p]


def conv2d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations: Any = None,
           name: str | None = None, filters: Any = None) -> Tensor:
    """2-D convolution: `tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")`.

    input [batch, h, w, in] (NHWC) or [batch, in, h, w] (NCHW); filter
    [kh, kw, in / groups, out]."""
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filter' and 'filters'")
    filter = filter if filter is not None else filters
    if padding is None:
        raise ValueError("conv2d requires a padding argument ('SAME', 'VALID' or a list)")
    pad, explicit = _padding(padding, data_format)
    return apply_op(
        "Conv2D", input=input, filter=filter, strides=_sequence(strides, "strides", data_format),
        padding=pad, explicit_paddings=explicit, use_cudnn_on_gpu=use_cudnn_on_gpu,
        data_format=data_format, dilations=_sequence(dilations, "dilations", data_format),
        name=name or "Conv2D",
    )


def _sequence_1d(value: Any, channel_index: int, name: str) -> list[int]:
    """TensorFlow's `_get_sequence(value, 1, channel_index, name)`: a 3-vector."""
    if value is None:
        return [1, 1, 1]
    v = [value] if isinstance(value, int) else list(value)
    if len(v) == 1:
        out = [1, 1, 1]
        out[3 - channel_index] = int(v[0])
        return out
    if len(v) == 3:
        return [int(x) for x in v]
    raise ValueError(f"{name} should be of length 1, 1 or 3. Received: {name}={value} of length {len(v)}")


def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: Any = None,
           use_cudnn_on_gpu: Any = None, data_format: str | None = None, name: str | None = None,
           input: Any = None, dilations: Any = None) -> Tensor:  # noqa: A002 - TF's name
    """1-D convolution over [batch, width, in] (NWC) with a [width, in, out] filter, built
    as TensorFlow builds it: a Conv2D over an inserted height-1 dimension."""
    if value is not None and input is not None:
        raise ValueError("Cannot specify both 'value' and 'input'")
    value = value if value is not None else input
    if data_format in (None, "NHWC", "NWC"):
        fmt, spatial_start, channel_index = "NHWC", -3, 2
    elif data_format in ("NCHW", "NCW"):
        fmt, spatial_start, channel_index = "NCHW", -2, 1
    else:
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
    with _name_scope(name, "conv1d", [value, filters]) as scope:
        strides = [1] + _sequence_1d(stride, channel_index, "stride")
        dil = [1] + _sequence_1d(dilations, channel_index, "dilations")
        x = array_ops.expand_dims(value, spatial_start)
        w = array_ops.expand_dims(filters, 0)
        y = apply_op("Conv2D", input=x, filter=w, strides=strides, padding=padding, explicit_paddings=[],
                     use_cudnn_on_gpu=True if use_cudnn_on_gpu is None else use_cudnn_on_gpu,
                     data_format=fmt, dilations=dil, name=scope)
        return array_ops.squeeze(y, [spatial_start])


def conv2d_backprop_input(input_sizes: Any, filter: Any = None, out_backprop: Any = None,
                          strides: Any = None, padding: Any = None, use_cudnn_on_gpu: bool = True,
                          data_format: str = "NHWC", dilations: Any = None,
                          name: str | None = None, filters: Any = None) -> Tensor:
    """The gradient of conv2d with respect to its input, of shape `input_sizes`
    (strides and dilations are 4-lists here, as in TensorFlow)."""
    filter = filter if filter is not None else filters
    pad, explicit = _padding(padding, data_format)
    return apply_op(
        "Conv2DBackpropInput", input_sizes=input_sizes, filter=filter, out_backprop=out_backprop,
        strides=strides, padding=pad, explicit_paddings=explicit,
        use_cudnn_on_gpu=use_cudnn_on_gpu, data_format=data_format,
        dilations=[1, 1, 1, 1] if dilations is None else dilations,
        name=name or "Conv2DBackpropInput",
    )


def conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any, strides: Any,
                           padding: Any, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                           dilations: Any = None, name: str | None = None) -> Tensor:
    """The gradient of conv2d with respect to its filter, of shape `filter_sizes`."""
    pad, explicit = _padding(padding, data_format)
    return apply_op(
        "Conv2DBackpropFilter", input=input, filter_sizes=filter_sizes, out_backprop=out_backprop,
        strides=strides, padding=pad, explicit_paddings=explicit,
        use_cudnn_on_gpu=use_cudnn_on_gpu, data_format=data_format,
        dilations=[1, 1, 1, 1] if dilations is None else dilations,
        name=name or "Conv2DBackpropFilter",
    )


def conv2d_transpose(value: Any = None, filter: Any = None, output_shape: Any = None,
                     strides: Any = None, padding: str = "SAME", data_format: str = "NHWC",
                     name: str | None = None, input: Any = None, filters: Any = None,
                     dilations: Any = None) -> Tensor:
    """The transpose of conv2d (a Conv2DBackpropInput op named after the scope):
    filter [kh, kw, out_channels, in_channels], output of shape `output_shape`."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    with _name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        value = convert_to_tensor(value, name="value")
        filter = convert_to_tensor(filter, name="filter")
        out_shape = convert_to_tensor(output_shape, name="output_shape")
        axis = 1 if data_format == "NCHW" else 3
        known = constant_value(out_shape)
        vs, fs = value.shape, filter.shape
        if known is not None and fs.ndims == 4 and fs[2] is not None:
            if int(np.asarray(known).reshape(-1)[axis]) != fs[2]:
                raise ValueError(
                    f"output_shape does not match filter's output channels, "
                    f"{int(np.asarray(known).reshape(-1)[axis])} != {fs[2]}")
        if vs.ndims == 4 and fs.ndims == 4 and vs[axis] is not None and fs[3] is not None \
                and vs[axis] != fs[3]:
            raise ValueError(f"input channels does not match filter's input channels, "
                             f"{vs[axis]} != {fs[3]}")
        pad, explicit = _padding(padding, data_format)
        return apply_op(
            "Conv2DBackpropInput", input_sizes=out_shape, filter=filter, out_backprop=value,
            strides=_sequence(strides, "strides", data_format), padding=pad,
            explicit_paddings=explicit, data_format=data_format,
            dilations=_sequence(dilations, "dilations", data_format), name=scope,
        )


def max_pool(value: Any = None, ksize: Any = None, strides: Any = None, padding: Any = None,
             data_format: str = "NHWC", name: str | None = None, input: Any = None) -> Tensor:
    """Max pooling: `tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")`."""
    value = value if value is not None else input
    pad, explicit = _padding(padding, data_format)
    # Converted first: a NumPy integer array keeps its dtype (T's default is float32).
    return apply_op(
        "MaxPool", input=convert_to_tensor(value, name="input"), ksize=_sequence(ksize, "ksize", data_format),
        strides=_sequence(strides, "strides", data_format), padding=pad,
        explicit_paddings=explicit, data_format=data_format, name=name or "MaxPool",
    )


def avg_pool(value: Any = None, ksize: Any = None, strides: Any = None, padding: Any = None,
             data_format: str = "NHWC", name: str | None = None, input: Any = None) -> Tensor:
    """Average pooling over windows (padding elements are not counted)."""
    value = value if value is not None else input
    return apply_op(
        "AvgPool", value=value, ksize=_sequence(ksize, "ksize", data_format),
        strides=_sequence(strides, "strides", data_format), padding=padding,
        data_format=data_format, name=name or "AvgPool",
    )


def max_pool_with_argmax(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
                         data_format: str = "NHWC", Targmax: Any = None, name: str | None = None,  # noqa: N803
                         output_dtype: Any = None, include_batch_in_index: bool = False) -> Any:
    """(max pooled output, argmax): argmax is the flat index ((y * w + x) * c + channel,
    plus the batch offset when `include_batch_in_index`) of each window's maximum."""
    if data_format != "NHWC":
        raise ValueError(f"`data_format` values other  than 'NHWC' are not supported. Received: "
                         f"data_format={data_format}")
    if Targmax is not None and output_dtype is not None:
        raise ValueError("Cannot specify both 'output_dtype' and 'Targmax'")
    targmax = Targmax if Targmax is not None else output_dtype
    return apply_op("MaxPoolWithArgmax", input=input, ksize=list(ksize), strides=list(strides), padding=padding,
                    Targmax=dtypes.int64 if targmax is None else targmax,
                    include_batch_in_index=include_batch_in_index, name=name or "MaxPoolWithArgmax")


# The kernels and gradient functions register against the declarations above.
from flowlab.ops import conv_grad  # noqa: E402,F401
