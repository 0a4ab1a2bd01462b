"""Tensors to bytes and bytes to files: `tf.serialize_tensor` / `tf.parse_tensor`
(a tensor as a serialized TensorProto, TensorFlow's encoding: raw little-endian
`tensor_content`, one `string_val` per string), `tf.decode_compressed` (ZLIB / GZIP /
none), `tf.write_file` (also all under tf.io) and `tf.timestamp` (seconds since the
epoch, float64, when the op runs).

The ops are TensorFlow's SerializeTensor, ParseTensor, DecodeCompressed, WriteFile
(stateful, no outputs; creates the file's directory) and Timestamp (stateful); none is
differentiable.  Kernels: flowlab.kernels.tensor_bytes_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["serialize_tensor", "parse_tensor", "decode_compressed", "write_file", "timestamp"]


def _scalar(op: Operation) -> list[Any]:
    return [TensorShape([])]


op_def("SerializeTensor", inputs=["tensor: T"], outputs=["serialized: string"], attrs=["T: type"],
       shape_fn=_scalar)
op_def("ParseTensor", inputs=["serialized: string"], outputs=["output: out_type"], attrs=["out_type: type"],
       shape_fn=lambda op: [TensorShape(None)])
op_def("DecodeCompressed", inputs=["bytes: string"], outputs=["output: string"],
       attrs=["compression_type: string = ''"], shape_fn=lambda op: [op.inputs[0].shape])
op_def("WriteFile", inputs=["filename: string", "contents: string"], shape_fn=lambda op: [], stateful=True)
op_def("Timestamp", outputs=["ts: float64"], shape_fn=_scalar, stateful=True)
for _t in ("SerializeTensor", "ParseTensor", "DecodeCompressed", "WriteFile", "Timestamp"):
    not_differentiable(_t)


def serialize_tensor(tensor: Any, name: str | None = None) -> Tensor:
    """A scalar string: `tensor` as a serialized TensorProto."""
    return apply_op("SerializeTensor", tensor=convert_to_tensor(tensor, name="tensor"),
                    name=name or "SerializeTensor")


def parse_tensor(serialized: Any, out_type: Any, name: str | None = None) -> Tensor:
    """The tensor a serialized TensorProto holds; it must be of `out_type`."""
    return apply_op("ParseTensor", serialized=convert_to_tensor(serialized, dtype=dtypes.string, name="serialized"),
                    out_type=dtypes.as_dtype(out_type), name=name or "ParseTensor")


def decode_compressed(bytes: Any, compression_type: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """Each string decompressed ("ZLIB", "GZIP", or "" for as it is)."""
    return apply_op("DecodeCompressed", bytes=convert_to_tensor(bytes, dtype=dtypes.string, name="bytes"),
                    compression_type=compression_type, name=name or "DecodeCompressed")


def write_file(filename: Any, contents: Any, name: str | None = None) -> Operation:
    """An op that writes the scalar string `contents` to the file `filename`."""
    return apply_op("WriteFile", filename=convert_to_tensor(filename, dtype=dtypes.string, name="filename"),
                    contents=convert_to_tensor(contents, dtype=dtypes.string, name="contents"),
                    name=name or "WriteFile")


def timestamp(name: str | None = None) -> Tensor:
    """The time the op runs at, in seconds since the Unix epoch (float64)."""
    return apply_op("Timestamp", name=name or "Timestamp")
