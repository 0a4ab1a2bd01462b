"""Feeds: what a `feed_dict` entry stands for, and the conversion of a fed value
into the array a step carries (dtype, strings as bytes, shape checked against the
tensor's), once per feed -- `Session.run` and `make_callable` share it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import cond as nest


def expand_feed(graph: Graph, key: Any, value: Any) -> list[tuple[Tensor, Any]]:
    """The (tensor, value) pairs a feed_dict entry stands for: one, or several for a
    key with `_feed_parts` (e.g. a SparseTensor) or a tuple of tensors."""
    if hasattr(key, "_feed_parts"):
        return list(zip(key._feed_parts(), key._split_feed_value(value)))
    if isinstance(key, tuple):
        # TensorFlow's nest.flatten_dict_items: a tuple of tensors (an RNN's state, an
        # LSTMStateTuple) is fed from the same places of a value of the same structure.
        keys, values = nest.flatten(key), nest.flatten(value)
        if len(keys) != len(values):
            raise ValueError(
                f"Could not flatten dictionary. Key had {len(keys)} elements, but value had "
                f"{len(values)} elements. Key: {keys}, value: {values}.")
        return [pair for k, v in zip(keys, values) for pair in expand_feed(graph, k, v)]
    try:
        t = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (TypeError, ValueError, KeyError) as e:
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
    return [(t, value)]


def feed_converter(t: Tensor) -> Callable[[Any], Any]:
    """A function turning a fed value into what a step carries for `t`: an array of
    `t`'s dtype (a NumPy scalar when 0-d), its shape checked against `t`'s."""
    dt = t.dtype.base_dtype
    shape = t.shape
    if dt is dtypes.string:
        def conv_str(v: Any) -> Any:
            arr = np.asarray(v, dtype=object)
            flat = [x.encode() if isinstance(x, str) else bytes(x) for x in arr.reshape(-1)]
            flat_arr = np.empty(len(flat), dtype=object)
            flat_arr[:] = flat
            out: Any = flat_arr.reshape(arr.shape)
            check_feed_shape(t, out.shape)
            return out if out.ndim else out[()]

        return conv_str
    np_t = np.dtype(dt.as_numpy_dtype)
    check = shape.ndims is not None and not all(d is None for d in shape.as_tuple())  # type: ignore[union-attr]
    known_rank = shape.ndims is not None
    accepted: list[tuple[int, ...] | None] = [None]  # the last shape that passed the check

    def conv(v: Any) -> Any:
        if type(v) is np.ndarray and v.dtype == np_t:
            arr = v
        else:
            if isinstance(v, Tensor):
                raise TypeError("The value of a feed cannot be a tf.Tensor object.")
            try:
                arr = np.asarray(v, dtype=np_t)
            except (TypeError, ValueError) as e:
                raise ValueError(
                    f"Cannot feed value {v!r} for Tensor {t.name} of dtype {dt.name}: {e}"
                ) from None
        if known_rank and (check or arr.ndim != shape.ndims) and arr.shape != accepted[0]:
            # A training loop feeds one shape every step: checked once, not per step.
            check_feed_shape(t, arr.shape)
            accepted[0] = arr.shape
        # 0-d values flow through a step as NumPy scalars (see plan.const_value).
        return arr[()] if arr.ndim == 0 else arr

    return conv


def check_feed_shape(t: Tensor, shape: tuple[int, ...]) -> None:
    if not t.shape.is_compatible_with(shape):
        raise ValueError(
            f"Cannot feed value of shape {tuple(shape)} for Tensor {t.name}, which has shape "
            f"{t.shape}"
        )
