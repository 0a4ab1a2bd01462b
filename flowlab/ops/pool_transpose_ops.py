"""TensorFlow 2's pooling and transposed-convolution entry points that tf.compat.v1.nn
also exports, built on the 2-D / 3-D ops as TensorFlow builds them:

- `max_pool1d` / `avg_pool1d`: MaxPool / AvgPool over an inserted height-1 axis
  (ExpandDims, pool, Squeeze, in a "MaxPool1d" / "AvgPool1D" scope);
- `max_pool2d` / `avg_pool2d`: MaxPool / AvgPool with int-or-list window sizes;
- `max_pool_v2` / `avg_pool_v2`: the 1-D, 2-D or 3-D pool by the input's rank;
- `conv1d_transpose` (Conv2DBackpropInput over an inserted axis), `conv3d_transpose`
  (Conv3DBackpropInputV2) and `conv_transpose` (either, or conv2d_transpose, by rank);
- `atrous_conv2d_transpose` (SpaceToBatch, Conv2DBackpropInput, BatchToSpace), and
  `conv3d_backprop_filter`, the name TensorFlow also gives conv3d_backprop_filter_v2.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, conv3d_ops, conv_ops, pool3d_ops
from flowlab.ops.builder import convert_to_tensor

__all__ = ["max_pool1d", "avg_pool1d", "max_pool2d", "avg_pool2d", "max_pool_v2", "avg_pool_v2",
           "conv1d_transpose", "conv3d_transpose", "conv_transpose", "conv3d_backprop_filter",
           "atrous_conv2d_transpose"]


def _sequence(value: Any, n: int, channel_index: int, name: str) -> list[int]:
    """TensorFlow's `_get_sequence(value, n, channel_index, name)`: an n+2 list."""
    if value is None:
        return [1] * (n + 2)
    v = [int(value)] if isinstance(value, int) else [int(x) for x in value]
    if len(v) == n + 2:
        return v
    if len(v) == 1:
        v = v * n
    elif len(v) != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. Received: {name}={value} of "
                         f"length {len(v)}")
    out = [1] * (n + 2)
    for i, x in enumerate(v):
        out[i + (2 if channel_index == 1 else 1)] = x
    return out


def _pool1d(fn: Any, scope: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
            data_format: str, name: str | None) -> Tensor:
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
    with get_default_graph().name_scope(name or scope) as sc:
        if data_format == "NWC":
            fmt, axis, ci = "NHWC", 1, 2
        else:
            fmt, axis, ci = "NCHW", 2, 1
        k = [1] + _sequence(ksize, 1, ci, "ksize")
        s = [1] + _sequence(strides, 1, ci, "strides")
        x = array_ops.expand_dims(convert_to_tensor(input, name="input"), axis)
        y = fn(x, ksize=k, strides=s, padding=padding, data_format=fmt)
        return array_ops.squeeze(y, [axis], name=sc)


def max_pool1d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """Max pooling over [batch, width, channels]."""
    return _pool1d(conv_ops.max_pool, "MaxPool1d", input, ksize, strides, padding, data_format, name)


def avg_pool1d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """Average pooling over [batch, width, channels]."""
    return _pool1d(conv_ops.avg_pool, "AvgPool1D", input, ksize, strides, padding, data_format, name)


def _channel(data_format: str | None) -> int:
    return 1 if data_format is not None and data_format.startswith("NC") else -1


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """Max pooling over [batch, height, width, channels]; sizes are ints or lists."""
    ci = _channel(data_format)
    return conv_ops.max_pool(input, ksize=_sequence(ksize, 2, ci, "ksize"),
                             strides=_sequence(strides, 2, ci, "strides"), padding=padding,
                             data_format=data_format, name=name)


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """Average pooling over [batch, height, width, channels]."""
    ci = _channel(data_format)
    return conv_ops.avg_pool(input, ksize=_sequence(ksize, 2, ci, "ksize"),
                             strides=_sequence(strides, 2, ci, "strides"), padding=padding,
                             data_format=data_format, name=name)


def _rank_n(input: Tensor, data_format: str | None) -> int:  # noqa: A002
    if input.shape.ndims is not None:
        return input.shape.ndims - 2
    if data_format is None:
        raise ValueError("`input` must have a static shape or a data format must be given. "
                         f"Received: input.shape={input.shape} and data_format={data_format}")
    return len(data_format) - 2


def _pool_v2(kind: str, input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any,  # noqa: A002
             name: str | None) -> Tensor:
    x = convert_to_tensor(input, name="input")
    n = _rank_n(x, data_format)
    if n not in (1, 2, 3):
        raise ValueError(f"`input.shape.rank` must be 3, 4 or 5. Received: input.shape={x.shape} of rank {n + 2}")
    ci = _channel(data_format)
    if n == 1:
        fn = max_pool1d if kind == "max" else avg_pool1d
        return fn(x, ksize, strides, padding, data_format or "NWC", name)
    if n == 2:
        fn = max_pool2d if kind == "max" else avg_pool2d
        return fn(x, ksize, strides, padding, data_format or "NHWC", name)
    fn3 = pool3d_ops.max_pool3d if kind == "max" else pool3d_ops.avg_pool3d
    return fn3(x, _sequence(ksize, 3, ci, "ksize"), _sequence(strides, 3, ci, "strides"), padding,
               data_format=data_format or "NDHWC", name=name)


def max_pool_v2(input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any = None,  # noqa: A002
                name: str | None = None) -> Tensor:
    """Max pooling over 1, 2 or 3 spatial dimensions (by the input's rank)."""
    return _pool_v2("max", input, ksize, strides, padding, data_format, name)


def avg_pool_v2(input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any = None,  # noqa: A002
                name: str | None = None) -> Tensor:
    """Average pooling over 1, 2 or 3 spatial dimensions (by the input's rank)."""
    return _pool_v2("avg", input, ksize, strides, padding, data_format, name)


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """The transpose of conv1d: filters [w, out_channels, in_channels]."""
    with get_default_graph().name_scope(name or "conv1d_transpose") as scope:
        if data_format not in ("NWC", "NCW"):
            raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
        fmt, axis, ci = ("NHWC", 1, 2) if data_format == "NWC" else ("NCHW", 2, 1)
        s = [1] + _sequence(strides, 1, ci, "stride")
        d = [1] + _sequence(dilations, 1, ci, "dilations")
        x = array_ops.expand_dims(convert_to_tensor(input, name="input"), axis)
        w = array_ops.expand_dims(convert_to_tensor(filters, name="filters"), 0)
        shape = convert_to_tensor(output_shape, name="output_shape")
        shape = array_ops.concat([shape[:axis], [1], shape[axis:]], axis=0)
        y = conv_ops.conv2d_backprop_input(shape, w, x, strides=s, padding=padding, data_format=fmt, dilations=d)
        return array_ops.squeeze(y, [axis], name=scope)


def conv3d_transpose(value: Any = None, filter: Any = None, output_shape: Any = None, strides: Any = None,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NDHWC", name: str | None = None,
                     input: Any = None, filters: Any = None, dilations: Any = None) -> Tensor:  # noqa: A002
    """The transpose of conv3d: filter [kd, kh, kw, out_channels, in_channels]."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    with get_default_graph().name_scope(name or "conv3d_transpose") as scope:
        ci = _channel(data_format)
        return conv3d_ops.conv3d_backprop_input_v2(
            convert_to_tensor(output_shape, name="output_shape"), filter, value,
            strides=_sequence(strides, 3, ci, "strides"), padding=padding, data_format=data_format,
            dilations=_sequence(dilations, 3, ci, "dilations"), name=scope)


def conv_transpose(input: Any, filters: Any, output_shape: Any, strides: Any, padding: str = "SAME",  # noqa: A002
                   data_format: Any = None, dilations: Any = None, name: str | None = None) -> Tensor:
    """conv1d/2d/3d_transpose by the length of `output_shape` (or the input's rank)."""
    with get_default_graph().name_scope(name or "conv_transpose"):
        shape_len = len(output_shape) if isinstance(output_shape, (list, tuple)) else \
            convert_to_tensor(output_shape).shape.as_list()[0]
        n = (shape_len or 0) - 2
        if n == 1:
            return conv1d_transpose(input, filters, output_shape, strides, padding, data_format or "NWC", dilations)
        if n == 2:
            return conv_ops.conv2d_transpose(input, filters, output_shape, strides, padding, data_format or "NHWC",
                                             dilations=dilations)
        if n == 3:
            return conv3d_transpose(input, filters, output_shape, strides, padding, data_format or "NDHWC",
                                    dilations=dilations)
        raise ValueError(f"`output_shape` must be of length 3, 4 or 5. Received: output_shape={output_shape} "
                         f"of length {n + 2}.")


# TensorFlow 2.21 exports Conv3DBackpropFilterV2's builder under this name too (tf.nn).
conv3d_backprop_filter = conv3d_ops.conv3d_backprop_filter_v2


def atrous_conv2d_transpose(value: Any, filters: Any, output_shape: Any, rate: int, padding: str,
                            name: str | None = None) -> Tensor:
    """The transpose of atrous_conv2d, built as TensorFlow builds it: SpaceToBatch of the
    (extra-padded) value, a VALID Conv2DBackpropInput, BatchToSpace cropping both paddings."""
    from flowlab.ops.depth_space_ops import batch_to_space, space_to_batch

    with get_default_graph().name_scope(name or "atrous_conv2d_transpose"):
        value = convert_to_tensor(value, name="value")
        filters = convert_to_tensor(filters, name="filters")
        vd, fd = value.shape.as_list() if value.shape.ndims else None, filters.shape.as_list() if filters.shape.ndims else None
        if vd and fd and vd[3] is not None and fd[3] is not None and vd[3] != fd[3]:
            raise ValueError(f"`value` channel count must be compatible with `filters` input channel count. "
                             f"Received: value.shape={value.shape} with channel count {vd[3]} and "
                             f"filters.shape={filters.shape} with input channel count {fd[3]}.")
        if rate < 1:
            raise ValueError(f"Argument `rate` cannot be less than one. Received: rate={rate}")
        if rate == 1:
            return conv_ops.conv2d_transpose(value, filters, output_shape, strides=[1, 1, 1, 1], padding=padding,
                                             data_format="NHWC")
        output_shape = list(output_shape) if isinstance(output_shape, tuple) else output_shape
        if padding == "SAME":
            fh, fw = fd[0], fd[1]
            ph, pw = fh + (fh - 1) * (rate - 1) - 1, fw + (fw - 1) * (rate - 1) - 1
            top, left = ph // 2, pw // 2
            bottom, right = ph - top, pw - left
        elif padding == "VALID":
            top = bottom = left = right = 0
        else:
            raise ValueError(f"Argument `padding` must be either 'VALID' or 'SAME'. Received: padding={padding}")
        in_h = output_shape[1] + top + bottom
        in_w = output_shape[2] + left + right
        extra_b = (rate - in_h % rate) % rate
        extra_r = (rate - in_w % rate) % rate
        value = space_to_batch(value, [[0, extra_b], [0, extra_r]], block_size=rate)
        sizes = [rate * rate * output_shape[0], (in_h + extra_b) // rate, (in_w + extra_r) // rate, output_shape[3]]
        value = conv_ops.conv2d_backprop_input(sizes, filters, value, strides=[1, 1, 1, 1], padding="VALID",
                                               data_format="NHWC")
        return batch_to_space(value, [[top, bottom + extra_b], [left, right + extra_r]], block_size=rate)
