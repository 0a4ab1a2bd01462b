"""SparseTensors as strings: `tf.serialize_sparse`, `tf.serialize_many_sparse` and
`tf.deserialize_many_sparse`.

A serialized SparseTensor is a string vector [3]: the TensorProtos of its indices,
values and dense shape, each written as TensorFlow writes them (`tensor_content`; for
strings the varint lengths, then the bytes), so either side reads the other's.
SerializeManySparse splits a rank-R SparseTensor along its first dimension into N
rank-(R-1) ones ([N, 3]); DeserializeManySparse stacks N of them back, the dense shape
being [N] plus the element-wise maximum of theirs.  Not differentiable.
Kernels: flowlab.kernels.sparse_serialize_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse"]

_SPARSE_IN = ["sparse_indices: int64", "sparse_values: T", "sparse_shape: int64"]
op_def("SerializeSparse", inputs=_SPARSE_IN, outputs=["serialized_sparse: out_type"],
       attrs=["T: type", "out_type: {string} = string"],
       shape_fn=lambda op: [TensorShape([3])],
       doc="A SparseTensor as the serialized TensorProtos of its three components.")
op_def("SerializeManySparse", inputs=_SPARSE_IN, outputs=["serialized_sparse: out_type"],
       attrs=["T: type", "out_type: {string} = string"],
       shape_fn=lambda op: [TensorShape([None, 3])],
       doc="Each minibatch entry (first dimension) of a SparseTensor, serialized.")


def _deserialize_shape(op: Operation) -> list[TensorShape]:
    return [TensorShape([None, None]), TensorShape([None]), TensorShape([None])]


op_def("DeserializeManySparse", inputs=["serialized_sparse: string"],
       outputs=["sparse_indices: int64", "sparse_values: dtype", "sparse_shape: int64"],
       attrs=["dtype: type"], shape_fn=_deserialize_shape,
       doc="N serialized SparseTensors stacked into one of rank R + 1.")
for _t in ("SerializeSparse", "SerializeManySparse", "DeserializeManySparse"):
    not_differentiable(_t)


def _sparse(sp_input: Any) -> Any:
    from flowlab.ops.sparse_tensor import SparseTensor, SparseTensorValue

    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


def serialize_sparse(sp_input: Any, name: str | None = None,
                     out_type: Any = dtypes.string) -> Tensor:
    """`sp_input` as a string vector [3] (`tf.serialize_sparse`)."""
    sp = _sparse(sp_input)
    return apply_op("SerializeSparse", sparse_indices=sp.indices, sparse_values=sp.values,
                    sparse_shape=sp.dense_shape, out_type=out_type,
                    name=name or "SerializeSparse")


def serialize_many_sparse(sp_input: Any, name: str | None = None,
                          out_type: Any = dtypes.string) -> Tensor:
    """Each entry of `sp_input`'s first dimension as a serialized SparseTensor, [N, 3]."""
    sp = _sparse(sp_input)
    return apply_op("SerializeManySparse", sparse_indices=sp.indices, sparse_values=sp.values,
                    sparse_shape=sp.dense_shape, out_type=out_type,
                    name=name or "SerializeManySparse")


def deserialize_many_sparse(serialized_sparse: Any, dtype: Any, rank: int | None = None,
                            name: str | None = None) -> Any:
    """The SparseTensor stacking the N serialized ones of `serialized_sparse` [N, 3]."""
    from flowlab.ops.sparse_tensor import SparseTensor

    indices, values, shape = apply_op("DeserializeManySparse", serialized_sparse=serialized_sparse,
                                      dtype=dtype, name=name or "DeserializeManySparse")
    indices.set_shape([None, rank])
    shape.set_shape([rank])
    return SparseTensor(indices, values, shape)
