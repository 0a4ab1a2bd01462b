"""`tf.io.parse_example` / `parse_single_example`: serialized `tf.train.Example`s to
tensors, as one `ParseExampleV2` op (TensorFlow's op type and signature, without
its ragged features).

`features` maps a feature name to a `FixedLenFeature(shape, dtype, default_value)`
(a dense tensor of [batch] + shape; a missing feature takes the default, or is an
error without one) or a `VarLenFeature(dtype)` (a `SparseTensor` whose row b holds
example b's values, dense shape [batch, longest]).  The kernel
(flowlab.kernels.parsing_kernels) decodes each record with the protobuf messages of
flowlab.kernels.example_proto.

    >>> parsed = parse_single_example(record, {"x": FixedLenFeature([2], tf.int64)})
    >>> parsed["x"]          # int64 [2]
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import convert_to_tensor, create_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.sparse_tensor import SparseTensor

__all__ = ["FixedLenFeature", "VarLenFeature", "parse_example", "parse_single_example"]

_PARSE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A dense feature of a fixed shape (`tf.io.FixedLenFeature`)."""

    def __new__(cls, shape: Any, dtype: Any, default_value: Any = None) -> FixedLenFeature:
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any length, parsed into a SparseTensor (`tf.io.VarLenFeature`)."""


def _shape_fn(op: Any) -> list[TensorShape]:
    serialized = op.inputs[0].shape
    batch = [] if serialized.ndims == 0 else [serialized[0].value if serialized.ndims else None]
    rank = len(batch) + 1
    n = op.get_attr("num_sparse")
    out = [TensorShape([None, rank])] * n + [TensorShape([None])] * n + [TensorShape([rank])] * n
    out += [TensorShape(batch).concatenate(as_shape(s)) for s in op.get_attr("dense_shapes")]
    return out


op_def("ParseExampleV2",
       inputs=["serialized: string", "names: string", "sparse_keys: string", "dense_keys: string",
               "ragged_keys: string", "dense_defaults: Tdense"],
       outputs=["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
                "sparse_shapes: num_sparse * int64", "dense_values: Tdense"],
       attrs=["Tdense: list(type) >= 0", "num_sparse: int >= 0", "sparse_types: list(type) >= 0",
              "ragged_value_types: list(type) >= 0 = []", "ragged_split_types: list(type) >= 0 = []",
              "dense_shapes: list(shape) >= 0"],
       shape_fn=_shape_fn,
       doc="Parses serialized Example protos (a scalar or a vector) into dense and sparse tensors.")
not_differentiable("ParseExampleV2")


def _check_dtype(key: str, dtype: Any) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype).base_dtype
    if dt not in _PARSE_TYPES:
        raise ValueError(
            f"Unsupported dtype {dt.name} for feature {key!r}: parsing supports float32, int64 "
            "and string.")
    return dt


def _parse(serialized: Any, features: dict[str, Any], name: str | None, default: str) -> dict[str, Any]:
    if not features:
        raise ValueError("Argument `features` cannot be None.")
    sparse = sorted(k for k, f in features.items() if isinstance(f, VarLenFeature))
    dense = sorted(k for k, f in features.items() if isinstance(f, FixedLenFeature))
    for k, f in features.items():
        if not isinstance(f, (VarLenFeature, FixedLenFeature)):
            raise ValueError(f"Unsupported feature type {type(f).__name__} for key {k!r}: "
                             "flowlab parses FixedLenFeature and VarLenFeature.")
    with get_default_graph().name_scope(name or default):
        ser = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        if ser.shape.ndims not in (None, 0, 1):
            raise ValueError(f"Input serialized must be a scalar or a vector, got shape {ser.shape}")
        defaults = []
        shapes = []
        for k in dense:
            f = features[k]
            dt = _check_dtype(k, f.dtype)
            shape = as_shape(f.shape)
            if not shape.is_fully_defined():
                raise ValueError(f"All dimensions of shape for feature {k} need to be known but "
                                 f"received {shape}.")
            shapes.append(shape.as_list())
            if f.default_value is None:
                defaults.append(convert_to_tensor(np.zeros([0], dt.as_numpy_dtype)
                                                  if dt != dtypes.string else
                                                  np.zeros([0], object), dtype=dt,
                                                  name=f"key_{k}"))
            else:
                dv = np.asarray(f.default_value, dtype=object if dt == dtypes.string
                                else dt.as_numpy_dtype)
                dv = np.broadcast_to(dv, shape.as_tuple()) if dv.size == 1 else dv.reshape(
                    shape.as_tuple())
                defaults.append(convert_to_tensor(np.array(dv), dtype=dt, name=f"key_{k}"))
        op = create_op(
            "ParseExampleV2", serialized=ser,
            names=convert_to_tensor(np.zeros([0], object), dtype=dtypes.string, name="names"),
            sparse_keys=convert_to_tensor(np.array([k.encode() for k in sparse], object),
                                          dtype=dtypes.string, name="sparse_keys"),
            dense_keys=convert_to_tensor(np.array([k.encode() for k in dense], object),
                                         dtype=dtypes.string, name="dense_keys"),
            ragged_keys=convert_to_tensor(np.zeros([0], object), dtype=dtypes.string,
                                          name="ragged_keys"),
            dense_defaults=defaults, num_sparse=len(sparse),
            sparse_types=[_check_dtype(k, features[k].dtype) for k in sparse],
            dense_shapes=shapes, name="ParseExampleV2")
    outs = op.outputs
    n = len(sparse)
    result: dict[str, Any] = {}
    for i, k in enumerate(sparse):
        st = SparseTensor.__new__(SparseTensor)
        st._indices, st._values, st._dense_shape = outs[i], outs[n + i], outs[2 * n + i]
        result[k] = st
    for i, k in enumerate(dense):
        result[k] = outs[3 * n + i]
    return result


def parse_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                  example_names: Any = None) -> dict[str, Any]:
    """A batch (vector) of serialized Examples parsed into a dict of tensors."""
    return _parse(serialized, features, name, "ParseExample")


def parse_single_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                         example_names: Any = None) -> dict[str, Any]:
    """One serialized Example (a scalar) parsed into a dict of tensors."""
    ser = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
    if ser.shape.ndims not in (None, 0):
        raise ValueError(f"Input serialized must be a scalar, got shape {ser.shape}")
    return _parse(ser, features, name, "ParseSingleExample")
