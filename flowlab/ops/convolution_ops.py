"""`tf.nn.convolution`, `tf.nn.atrous_conv2d` and `tf.nn.pool`: the rank-generic
TensorFlow 1.x front ends, for 2-D windows (4-D NHWC/NCHW data) and undilated 1-D
windows (3-D NWC data: expanded to 2-D around one Conv2D / pool, as TensorFlow does).

With every dilation rate 1 they are one Conv2D / MaxPool / AvgPool named after the
scope ("convolution", "max_pool").  A rate above 1 is run as TensorFlow 1.x runs it:
SpaceToBatchND, the VALID op, BatchToSpaceND (flowlab.ops.space_to_batch_ops), with
TensorFlow's errors for a rate combined with strides, or with SAME pooling.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.conv_ops import avg_pool, conv2d, max_pool
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.space_to_batch_ops import with_space_to_batch

__all__ = ["convolution", "atrous_conv2d", "pool"]


def _pair(value: Any, what: str) -> list[int]:
    if value is None:
        return [1, 1]
    v = [int(x) for x in np.asarray(value).reshape(-1)]
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise ValueError(f"{what} must be of size 2 for 2-D windows. Received: {what}={value}")
    return v


def _four(v: list[int], data_format: str) -> list[int]:
    return [1, 1] + v if data_format.startswith("NC") else [1] + v + [1]


def _rank4(input: Tensor, what: str) -> None:  # noqa: A002
    if input.shape.ndims is not None and input.shape.ndims != 4:
        raise NotImplementedError(f"{what}: flowlab supports 2-D windows (rank-4 input) and undilated 1-D "
                                  f"windows (rank 3, NWC), got rank {input.shape.ndims}")


def _one_d(input: Tensor, data_format: str | None, rate: Any) -> bool:  # noqa: A002
    """A 3-D NWC input with unit rates: computed as a 2-D window of height 1."""
    rates = [int(v) for v in np.asarray(1 if rate is None else rate).reshape(-1)]
    return input.shape.ndims == 3 and data_format in (None, "NWC") and all(r == 1 for r in rates)


def _single(value: Any, what: str) -> int:
    v = [int(x) for x in np.asarray(1 if value is None else value).reshape(-1)]
    if len(v) != 1:
        raise ValueError(f"{what} must be of size 1 for 1-D windows. Received: {what}={value}")
    return v[0]


def convolution(input: Any, filter: Any = None, padding: Any = None, strides: Any = None,  # noqa: A002
                dilation_rate: Any = None, name: str | None = None, data_format: str | None = None,
                filters: Any = None, dilations: Any = None) -> Tensor:
    """`tf.nn.convolution` for 2-D windows: Conv2D, or a dilated Conv2D through
    SpaceToBatchND when `dilation_rate` exceeds 1."""
    filter = filter if filter is not None else filters
    rate = _pair(dilation_rate if dilation_rate is not None else dilations, "dilation_rate")
    s = _pair(strides, "strides")
    fmt = data_format or "NHWC"
    with _name_scope(name, "convolution", [input, filter]) as scope:
        input = convert_to_tensor(input, name="input")
        filter = convert_to_tensor(filter, name="filter")
        if _one_d(input, data_format, dilation_rate if dilation_rate is not None else dilations):
            x = array_ops.expand_dims(input, -3)
            f = array_ops.expand_dims(filter, 0)
            y = conv2d(x, f, [1, 1, _single(strides, "strides"), 1], padding, data_format="NHWC", name=scope)
            return array_ops.squeeze(y, [-3])
        _rank4(input, "convolution")
        if all(r == 1 for r in rate):
            return conv2d(input, filter, _four(s, fmt), padding, data_format=fmt, name=scope)
        if any(v > 1 for v in s):
            raise ValueError(f"`strides` > 1 not supported in conjunction with `dilation_rate` > 1. "
                             f"Received: strides={s} and dilation_rate={rate}")
        if fmt != "NHWC":
            raise NotImplementedError("a dilation_rate above 1 is supported for NHWC data only")
        convert_to_tensor(np.asarray(rate, np.int32), name="dilation_rate")
        fshape = filter.shape.as_list() if filter.shape.ndims is not None else None
        if fshape is None or None in fshape[:2]:
            raise NotImplementedError("a dilation_rate above 1 needs the filter's spatial size")
        convert_to_tensor(np.asarray(fshape, np.int32), name="filter_shape")

        def op(x: Tensor, _: int, pad: Any) -> Tensor:
            return conv2d(x, filter, [1, 1, 1, 1], pad, data_format=fmt, name=scope)

        return with_space_to_batch(input, rate, padding, op, filter_shape=fshape)


def atrous_conv2d(value: Any, filters: Any, rate: int, padding: str, name: str | None = None) -> Tensor:
    """`tf.nn.atrous_conv2d`: convolution with dilation_rate (rate, rate)."""
    return convolution(value, filters, padding, dilation_rate=np.broadcast_to(rate, (2,)), name=name)


def pool(input: Any, window_shape: Any, pooling_type: str, padding: str, dilation_rate: Any = None,  # noqa: A002
         strides: Any = None, name: str | None = None, data_format: str | None = None,
         dilations: Any = None) -> Tensor:
    """`tf.nn.pool` for 2-D windows: MaxPool / AvgPool, dilated through SpaceToBatchND
    (VALID padding, unit strides) as TensorFlow 1.x does."""
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"Invalid pooling_type: {pooling_type!r}")
    rate_arg = dilation_rate if dilation_rate is not None else dilations
    with _name_scope(name, f"{pooling_type.lower()}_pool", [input]) as scope:
        input = convert_to_tensor(input, name="input")
        if _one_d(input, data_format, rate_arg):
            convert_to_tensor(np.ones(1, np.int32), name="dilation_rate")
            fn1 = max_pool if pooling_type == "MAX" else avg_pool
            y = fn1(array_ops.expand_dims(input, 1), ksize=[1, 1, _single(window_shape, "window_shape"), 1],
                    strides=[1, 1, _single(strides, "strides"), 1], padding=padding, data_format="NHWC", name=scope)
            return array_ops.squeeze(y, [1])
        rate = _pair(rate_arg, "dilation_rate")
        window = _pair(window_shape, "window_shape")
        s = _pair(strides, "strides")
        fmt = data_format or "NHWC"
        _rank4(input, "pool")
        dilated = any(r > 1 for r in rate)
        if dilated and padding == "SAME":
            raise ValueError("pooling with 'SAME' padding is not implemented for `dilation_rate` > 1. "
                             f"Received: padding={padding} and dilation_rate={np.asarray(rate)}")
        if dilated and any(v > 1 for v in s):
            raise ValueError("`strides` > 1 not supported in conjunction with `dilation_rate` > 1. "
                             f"Received: strides={np.asarray(s)} and dilation_rate={np.asarray(rate)}")
        convert_to_tensor(np.asarray(rate, np.int32), name="dilation_rate")
        fn = max_pool if pooling_type == "MAX" else avg_pool

        def op(x: Tensor, _: int, pad: Any) -> Tensor:
            return fn(x, ksize=_four(window, fmt), strides=_four(s, fmt), padding=pad, data_format=fmt, name=scope)

        if not dilated:
            return op(input, 2, padding)
        if fmt != "NHWC":
            raise NotImplementedError("a dilation_rate above 1 is supported for NHWC data only")
        return with_space_to_batch(input, rate, padding, op, filter_shape=window)
