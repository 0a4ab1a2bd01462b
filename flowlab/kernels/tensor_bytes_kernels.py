"""Kernels of SerializeTensor, ParseTensor, DecodeCompressed, WriteFile and Timestamp
(flowlab.ops.tensor_bytes_ops), on the host, with TensorFlow's messages."""

from __future__ import annotations

import gzip
import os
import re
import time
import zlib
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.kernels.registry import CPU, kernel
from flowlab.kernels.summary_kernels import tensor_proto

# TensorFlow's DataTypeString names where they are not flowlab's dtype names.
_TF_TYPE_NAME = {"float32": "float", "float64": "double", "float16": "half"}


def _bad(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _scalar_bytes(v: Any, what: str) -> bytes:
    a = np.asarray(v, dtype=object)
    if a.ndim != 0:
        raise _bad(f"{what} must be scalar, got shape {list(a.shape)}")
    s = a.item()
    return s if isinstance(s, bytes) else str(s).encode()


@kernel("SerializeTensor", devices=CPU)
def serialize_tensor(ctx: Any, tensor: Any) -> Any:
    from tensorboard.compat.proto import tensor_pb2

    proto = tensor_pb2.TensorProto()
    tensor_proto(tensor, proto)
    return proto.SerializeToString()


@kernel("ParseTensor", devices=CPU)
def parse_tensor(ctx: Any, serialized: Any) -> Any:
    import base64

    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import tensor_pb2
    from tensorboard.util import tensor_util

    data = _scalar_bytes(serialized, "Expected `serialized` to be a scalar, got shape:")
    try:
        proto = tensor_pb2.TensorProto.FromString(data)
        value = tensor_util.make_ndarray(proto)
    except (DecodeError, ValueError, TypeError):
        raise _bad(f"Could not parse `serialized` as TensorProto, base64: {base64.b64encode(data).decode()}") from None
    want = ctx.attrs["out_type"]
    got = dtypes.as_dtype(proto.dtype)
    if got != want:
        raise _bad(f"Type mismatch between parsed tensor ({_TF_TYPE_NAME.get(got.name, got.name)}) and dtype "
                   f"({_TF_TYPE_NAME.get(want.name, want.name)})")
    if want == dtypes.string:
        return np.asarray(value, dtype=object)
    return np.asarray(value, dtype=want.as_numpy_dtype)


def _decompress(kind: str, s: bytes) -> bytes:
    try:
        if kind == "ZLIB":
            return zlib.decompress(s)
        return gzip.decompress(s)
    except zlib.error as e:
        m = re.match(r"Error (-?\d+) while decompressing data: (.*)", str(e))
        detail = f"inflate() failed with error {m.group(1)}: {m.group(2)}" if m else str(e)
        raise errors.DataLossError(None, None, detail) from None
    except (OSError, EOFError) as e:
        raise errors.DataLossError(None, None, f"inflate() failed: {e}") from None


@kernel("DecodeCompressed", devices=CPU)
def decode_compressed(ctx: Any, bytes_: Any) -> Any:
    kind = ctx.attrs["compression_type"]
    if kind not in ("", "ZLIB", "GZIP"):
        raise _bad("Only ZLIB, ZSTD, GZIP or NONE are supported compressions")
    a = np.asarray(bytes_, dtype=object)
    if kind == "":
        return a
    out = np.empty(a.shape, dtype=object)
    for idx, s in np.ndenumerate(a):
        out[idx] = _decompress(kind, s)
    return out


@kernel("WriteFile", devices=CPU)
def write_file(ctx: Any, filename: Any, contents: Any) -> None:
    name = _scalar_bytes(filename, "Input filename tensor").decode()
    data = _scalar_bytes(contents, "Contents tensor")
    folder = os.path.dirname(name)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(name, "wb") as f:
        f.write(data)


@kernel("Timestamp", devices=CPU)
def timestamp(ctx: Any) -> Any:
    return np.float64(time.time())
