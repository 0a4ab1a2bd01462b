"""Kernels of UnsortedSegmentJoin and DecodeJSONExample (flowlab.ops.string_join_ops),
on the host, with TensorFlow's messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel


def _bad(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


@kernel("UnsortedSegmentJoin", devices=CPU)
def unsorted_segment_join(ctx: Any, inputs: Any, segment_ids: Any, num_segments: Any) -> Any:
    data = np.asarray(inputs, dtype=object)
    ids = np.asarray(segment_ids).astype(np.int64)
    n = int(np.asarray(num_segments))
    if data.shape[:ids.ndim] != ids.shape:
        raise _bad("data.shape = [" + ",".join(map(str, data.shape)) + "] does not start with segment_ids.shape = ["
                   + ",".join(map(str, ids.shape)) + "]")
    if n < 0:
        raise _bad("Number of segments cannot be negative.")
    inner = data.shape[ids.ndim:]
    flat = data.reshape((ids.size,) + inner)
    flat_ids = ids.reshape(-1)
    sep = ctx.attrs["separator"]
    sep_b = sep.encode() if isinstance(sep, str) else sep
    parts: list[list[list[bytes]]] = [[[] for _ in range(int(np.prod(inner)) if inner else 1)] for _ in range(n)]
    if flat_ids.size and (flat_ids.min() < 0 or flat_ids.max() >= n):
        raise _bad("segment_ids are not allowed to exceed num_segments or to have negative values.")
    for row, seg in zip(flat.reshape(ids.size, -1), flat_ids):
        for j, s in enumerate(row):
            parts[seg][j].append(s if isinstance(s, bytes) else str(s).encode())
    out = np.empty((n,) + inner, dtype=object)
    flat_out = out.reshape(n, -1)
    for i in range(n):
        for j in range(flat_out.shape[1]):
            flat_out[i, j] = sep_b.join(parts[i][j])
    return out


@kernel("DecodeJSONExample", devices=CPU)
def decode_json_example(ctx: Any, json_examples: Any) -> Any:
    from google.protobuf import json_format

    from flowlab.kernels.example_proto import Example

    a = np.asarray(json_examples, dtype=object)
    out = np.empty(a.shape, dtype=object)
    for idx, s in np.ndenumerate(a):
        text = s.decode() if isinstance(s, bytes) else str(s)
        try:
            msg = json_format.Parse(text, Example())
        except json_format.ParseError as e:
            raise _bad(f"Error while parsing JSON: {e}") from None
        out[idx] = msg.SerializeToString(deterministic=True)
    return out
