"""Argument normalization shared by the tf.layers classes: n-tuples of ints, data
formats and paddings, with Keras' messages for bad values."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor


def ntuple(value: Any, n: int, name: str) -> list[int]:
    """An int, or n ints, as a list of n ints (`kernel_size=3` -> [3, 3])."""
    if isinstance(value, (int, np.integer)):
        return [int(value)] * n
    try:
        value = [int(v) for v in value]
    except (TypeError, ValueError):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value}") from None
    if len(value) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value}")
    return value


def channels_first(data_format: str) -> bool:
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         f"\"channels_last\". Received: {data_format}")
    return data_format == "channels_first"


def nn_format(data_format: str, rank: int) -> str:
    """"channels_last" -> "NWC" / "NHWC" / "NDHWC" (channels_first: "NCW", ...)."""
    spatial = {1: "W", 2: "HW", 3: "DHW"}[rank]
    return "NC" + spatial if channels_first(data_format) else "N" + spatial + "C"


def padding_name(padding: str) -> str:
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError("The `padding` argument must be a list/tuple or one of \"valid\", "
                         f"\"same\" (or \"causal\", only for `Conv1D). Received: {padding}")
    return padding.upper()


def float_dtype(x: Tensor) -> dtypes.DType:
    dt = x.dtype.base_dtype
    return dt if dt.is_floating else dtypes.float32
