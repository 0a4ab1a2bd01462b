"""Kernel of ParseSequenceExampleV2 (flowlab.ops.sequence_parsing_ops): serialized
SequenceExamples to tensors.

The context features are parsed as an Example's (flowlab.kernels.parsing_kernels).
A dense feature list gives `[steps] + shape` per record, every step holding exactly
the shape's number of values; a batch is padded with zeros (empty strings) to its
longest list, and the lengths are returned.  A sparse feature list is indexed by
(step, position), with (example, ...) in front for a batch.  Errors carry TensorFlow's
messages (a required feature list missing, a step of another type or size).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from flowlab import errors
from flowlab.kernels.example_proto import SequenceExample
from flowlab.kernels.parsing_kernels import _KIND, _NAME, feature_values, keys, parse_features
from flowlab.kernels.registry import CPU, kernel


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _decode(record: Any) -> Any:
    data = record if isinstance(record, bytes) else bytes(record)
    try:
        return SequenceExample.FromString(data)
    except DecodeError:
        raise _invalid(f"Could not parse example input, value: '{data.decode('latin-1')}'") from None


def _steps(ex: Any, key: str, dt: np.dtype) -> list[Any] | None:
    """The values of each step of feature list `key`, or None when it is absent."""
    lists = ex.feature_lists.feature_list
    if key not in lists:
        return None
    out = []
    for i, f in enumerate(lists[key].feature):
        v = feature_values(f, dt)
        if isinstance(v, str):
            raise _invalid(f"Name: <unknown>, Feature list: {key}, Index: {i}.  Data types don't "
                           f"match. Expected type: {_NAME[_KIND[dt]]}, Actual type: {_NAME[v]}")
        out.append(v)
    return out


def _dense_list(records: list[Any], single: bool, key: str, dt: np.dtype, shape: tuple[int, ...],
                missing_ok: bool) -> tuple[Any, Any]:
    size = int(np.prod(shape, dtype=np.int64))
    per_record = []
    for ex in records:
        steps = _steps(ex, key, dt)
        if steps is None:
            if not missing_ok:
                raise _invalid(f"Name: <unknown>, Feature list '{key}' is required but could not be "
                               "found.  Did you mean to include it in "
                               "feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?")
            steps = []
        for i, v in enumerate(steps):
            if v.size != size:
                raise _invalid(f"Name: <unknown>, Key: {key}, Index: {i}.  Number of {_NAME[_KIND[dt]]} "
                               f"values != expected.  values size: {v.size} but output shape: "
                               f"[{','.join(str(d) for d in shape)}]")
        per_record.append(steps)
    longest = max((len(s) for s in per_record), default=0)
    pad = b"" if dt == np.dtype(object) else 0
    out = np.full((len(records), longest, *shape), pad, dtype=dt)
    for b, steps in enumerate(per_record):
        for i, v in enumerate(steps):
            out[b, i, ...] = v.reshape(shape)
    lengths = np.array([len(s) for s in per_record], np.int64)
    return (out[0], lengths[0]) if single else (out, lengths)


def _sparse_list(records: list[Any], single: bool, key: str, dt: np.dtype) -> tuple[Any, Any, Any]:
    idx: list[list[int]] = []
    vals: list[Any] = []
    longest_steps = longest_values = 0
    for b, ex in enumerate(records):
        steps = _steps(ex, key, dt) or []
        longest_steps = max(longest_steps, len(steps))
        for i, v in enumerate(steps):
            longest_values = max(longest_values, len(v))
            idx.extend(([i, j] if single else [b, i, j]) for j in range(len(v)))
            vals.extend(v.tolist())
    rank = 2 if single else 3
    values = np.empty(len(vals), dtype=object) if dt == np.dtype(object) else np.array(vals, dtype=dt)
    if dt == np.dtype(object):
        values[:] = vals
    shape = [longest_steps, longest_values] if single else [len(records), longest_steps, longest_values]
    return (np.array(idx, np.int64).reshape(-1, rank), values, np.array(shape, np.int64))


@kernel("ParseSequenceExampleV2", devices=CPU)
def parse_sequence_example_v2(ctx: Any, serialized: Any, debug_name: Any, context_sparse_keys: Any,
                              context_dense_keys: Any, context_ragged_keys: Any,
                              feature_list_sparse_keys: Any, feature_list_dense_keys: Any,
                              feature_list_ragged_keys: Any, missing_assumed_empty: Any,
                              *context_dense_defaults: Any) -> list[Any]:
    a = ctx.attrs
    ser = np.asarray(serialized, dtype=object)
    single = ser.ndim == 0
    records = [_decode(r) for r in ser.reshape(-1)]
    c_idx, c_vals, c_shapes, c_dense = parse_features(
        [ex.context.feature for ex in records], single, keys(context_sparse_keys),
        a["context_sparse_types"], keys(context_dense_keys), a["Tcontext_dense"],
        a["context_dense_shapes"], context_dense_defaults)
    f_idx, f_vals, f_shapes = [], [], []
    for key, t in zip(keys(feature_list_sparse_keys), a["feature_list_sparse_types"]):
        i, v, s = _sparse_list(records, single, key, np.dtype(t.as_numpy_dtype))
        f_idx.append(i)
        f_vals.append(v)
        f_shapes.append(s)
    f_dense, f_lengths = [], []
    missing = np.asarray(missing_assumed_empty, dtype=bool).reshape(-1)
    for n, (key, t, shape) in enumerate(zip(keys(feature_list_dense_keys), a["feature_list_dense_types"],
                                            a["feature_list_dense_shapes"])):
        d, length = _dense_list(records, single, key, np.dtype(t.as_numpy_dtype), tuple(shape),
                                bool(missing[n]) if n < missing.size else False)
        f_dense.append(d)
        f_lengths.append(length)
    return [*c_idx, *c_vals, *c_shapes, *c_dense, *f_idx, *f_vals, *f_shapes, *f_dense, *f_lengths]
