"""Kernels of the sparse (de)serialization ops (flowlab.ops.sparse_serialize_ops):
TensorProtos written with `tensor_content` as TensorFlow's AsProtoTensorContent does,
read back from either that or the typed value fields."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.kernels.registry import CPU, kernel


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _to_proto(arr: np.ndarray, dtype: Any) -> bytes:
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2

    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in arr.shape])
    if arr.dtype == object:
        items = [v if isinstance(v, bytes) else str(v).encode() for v in arr.reshape(-1)]
        content = b"".join(_varint(len(v)) for v in items) + b"".join(items)
    else:
        content = np.ascontiguousarray(arr).tobytes()
    proto = tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum, tensor_shape=shape,
                                   tensor_content=content)
    return proto.SerializeToString()


def _from_proto(data: bytes) -> tuple[Any, np.ndarray]:
    from tensorboard.compat.proto import tensor_pb2
    from tensorboard.util import tensor_util

    proto = tensor_pb2.TensorProto.FromString(data)
    dt = dtypes.as_dtype(proto.dtype)
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    if dt == dtypes.string and proto.tensor_content:
        buf, pos, n = proto.tensor_content, 0, int(np.prod(shape, dtype=np.int64))
        lengths = []
        for _ in range(n):
            length = shift = 0
            while True:
                b = buf[pos]
                pos += 1
                length |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            lengths.append(length)
        out = np.empty(n, object)
        for i, length in enumerate(lengths):
            out[i] = bytes(buf[pos:pos + length])
            pos += length
        return dt, out.reshape(shape)
    return dt, np.asarray(tensor_util.make_ndarray(proto)).reshape(shape)


def _serialize(indices: np.ndarray, values: np.ndarray, shape: np.ndarray, t: Any) -> list[bytes]:
    return [_to_proto(np.asarray(indices, np.int64), dtypes.int64),
            _to_proto(np.asarray(values, t.as_numpy_dtype if t != dtypes.string else object), t),
            _to_proto(np.asarray(shape, np.int64), dtypes.int64)]


def _strings(items: list[Any], shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(len(items), object)
    out[:] = items
    return out.reshape(shape)


@kernel("SerializeSparse", devices=CPU)
def serialize_sparse(ctx: Any, indices: Any, values: Any, shape: Any) -> Any:
    return _strings(_serialize(indices, values, shape, ctx.attrs["T"]), (3,))


@kernel("SerializeManySparse", devices=CPU)
def serialize_many_sparse(ctx: Any, indices: Any, values: Any, shape: Any) -> Any:
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    if shape.size < 2:
        raise errors.InvalidArgumentError(
            None, None, f"Rank of input SparseTensor should be > 1, but saw rank: {shape.size}")
    n = int(shape[0])
    rows = []
    for i in range(n):
        keep = indices[:, 0] == i
        rows += _serialize(indices[keep][:, 1:], values[keep], shape[1:], ctx.attrs["T"])
    return _strings(rows, (n, 3))


@kernel("DeserializeManySparse", devices=CPU)
def deserialize_many_sparse(ctx: Any, serialized: Any) -> list[Any]:
    s = np.asarray(serialized)
    if s.ndim != 2 or s.shape[1] != 3:
        raise errors.InvalidArgumentError(
            None, None, f"Serialized sparse should be a matrix with 3 columns, got shape "
            f"{list(s.shape)}")
    want = ctx.attrs["dtype"]
    parts, shapes = [], []
    for i, (ix, val, sh) in enumerate(s):
        _, ix_a = _from_proto(ix)
        dt, val_a = _from_proto(val)
        _, sh_a = _from_proto(sh)
        if dt != want:
            raise errors.InvalidArgumentError(
                None, None, f"Requested SparseTensor of type {want.name} but SparseTensor[{i}]"
                f".values.dtype() == {dt.name}")
        ix_a = ix_a.reshape(-1, sh_a.size).astype(np.int64)
        parts.append((np.concatenate([np.full((len(ix_a), 1), i, np.int64), ix_a], 1), val_a))
        shapes.append(sh_a.astype(np.int64))
    if not parts:
        raise errors.InvalidArgumentError(
            None, None, "Must have at least 1 serialized SparseTensor")
    ranks = {len(x) for x in shapes}
    if len(ranks) != 1:
        raise errors.InvalidArgumentError(None, None, "Inconsistent shape across SparseTensors")
    dense = np.concatenate([[len(parts)], np.max(np.stack(shapes), axis=0)]).astype(np.int64)
    indices = np.concatenate([p[0] for p in parts])
    values = np.concatenate([p[1].reshape(-1) for p in parts])
    if want == dtypes.string:
        values = values.astype(object)
    else:
        values = values.astype(want.as_numpy_dtype)
    return [indices, values, dense]
