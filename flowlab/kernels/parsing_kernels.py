"""Kernel of ParseExampleV2 (flowlab.ops.parsing_ops): serialized Examples to tensors.

Each record is decoded with the protobuf `Example` message
(flowlab.kernels.example_proto); errors carry TensorFlow's messages (a record that
is not an Example, a missing required feature, a feature of another type or size).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from flowlab import errors
from flowlab.kernels.example_proto import Example
from flowlab.kernels.registry import CPU, kernel

_KIND = {np.dtype(np.float32): "float_list", np.dtype(np.int64): "int64_list",
         np.dtype(object): "bytes_list"}
_NAME = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _decode(record: Any) -> Any:
    data = record if isinstance(record, bytes) else bytes(record)
    try:
        return Example.FromString(data)
    except DecodeError:
        raise _invalid(f"Could not parse example input, value: '{data.decode('latin-1')}'") from None


def _values(feats: Any, key: str, dtype: np.dtype) -> Any:
    """The values of feature `key` of a `Features` map as an array of `dtype`, None
    when absent, the kind's name when it holds another kind."""
    if key not in feats:
        return None
    return feature_values(feats[key], dtype)


def feature_values(f: Any, dtype: np.dtype) -> Any:
    """A `Feature`'s values as an array of `dtype`, or the kind's name when it holds
    another kind (an unset kind is no values)."""
    kind = f.WhichOneof("kind")
    want = _KIND[dtype]
    if kind is None:
        return np.zeros([0], dtype)
    if kind != want:
        return kind
    vals = getattr(f, kind).value
    if dtype == np.dtype(object):
        out = np.empty(len(vals), dtype=object)
        out[:] = list(vals)
        return out
    return np.array(vals, dtype=dtype)


@kernel("ParseExampleV2", devices=CPU)
def parse_example_v2(ctx: Any, serialized: Any, names: Any, sparse_keys: Any, dense_keys: Any,
                     ragged_keys: Any, *dense_defaults: Any) -> list[Any]:
    a = ctx.attrs
    ser = np.asarray(serialized, dtype=object)
    records = [_decode(r) for r in ser.reshape(-1)]
    indices, values, dshapes, dense = parse_features(
        [ex.features.feature for ex in records], ser.ndim == 0, keys(sparse_keys), a["sparse_types"],
        keys(dense_keys), a["Tdense"], a["dense_shapes"], dense_defaults)
    return [*indices, *values, *dshapes, *dense]


def keys(t: Any) -> list[str]:
    """The strings of a keys input."""
    return [k.decode() if isinstance(k, bytes) else k for k in np.asarray(t).reshape(-1)]


def parse_features(maps: list[Any], single: bool, skeys: list[str], sparse_types: list[Any],
                   dkeys: list[str], dense_types: list[Any], dense_shapes: list[Any],
                   dense_defaults: Any) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """(sparse indices, sparse values, sparse shapes, dense values) of the `Features`
    maps of a batch (one map and no batch dimension when `single`): what ParseExampleV2
    returns, and ParseSequenceExampleV2 for the context features."""
    stypes = [t.as_numpy_dtype for t in sparse_types]
    dtypes_ = [t.as_numpy_dtype for t in dense_types]
    shapes = [tuple(s) for s in dense_shapes]
    indices, values, dshapes = [], [], []
    for key, dt in zip(skeys, stypes):
        dt = np.dtype(dt)
        rows = []
        for ex in maps:
            v = _values(ex, key, dt)
            if isinstance(v, str):
                raise _invalid(f"Key: {key}.  Data types don't match. Expected type: "
                               f"{_NAME[_KIND[dt]]}, Actual type: {_NAME[v]}")
            rows.append(np.zeros([0], dt) if v is None else v)
        longest = max((len(r) for r in rows), default=0)
        if single:
            idx = np.arange(len(rows[0]), dtype=np.int64).reshape(-1, 1)
            shape = np.array([longest], np.int64)
        else:
            idx = np.array([[b, j] for b, r in enumerate(rows) for j in range(len(r))],
                           dtype=np.int64).reshape(-1, 2)
            shape = np.array([len(rows), longest], np.int64)
        vals = np.concatenate(rows) if rows else np.zeros([0], dt)
        indices.append(idx)
        values.append(vals.astype(dt) if dt != np.dtype(object) else vals)
        dshapes.append(shape)

    dense = []
    for key, dt, shape, default in zip(dkeys, dtypes_, shapes, dense_defaults):
        dt = np.dtype(dt)
        size = int(np.prod(shape, dtype=np.int64))
        out = np.empty((len(maps), *shape), dtype=dt)
        for b, ex in enumerate(maps):
            v = _values(ex, key, dt)
            if isinstance(v, str):
                raise _invalid(f"Key: {key}.  Data types don't match. Data type: {_NAME[v]} but "
                               f"expected type: {_NAME[_KIND[dt]]}")
            if v is None:
                if np.size(default) == 0:
                    raise _invalid(f"Feature: {key} (data type: {_NAME[_KIND[dt]]}) is required "
                                   "but could not be found.")
                out[b, ...] = np.asarray(default).reshape(shape)
                continue
            if v.size != size:
                raise _invalid(f"Key: {key}.  Can't parse serialized Example: Some "
                               f"{_KIND[dt]} slice was not parsed.")
            out[b, ...] = v.reshape(shape)  # [b, ...]: a scalar string is stored, not its 0-d array
        dense.append(out[0] if single else out)
    return indices, values, dshapes, dense
