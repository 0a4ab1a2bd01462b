"""Strings gathered into groups: `tf.strings.unsorted_segment_join` (the
UnsortedSegmentJoin op: the strings of each segment id joined with `separator`, in
input order; "" for an empty segment; an id outside [0, num_segments) is an error) and
`tf.io.decode_json_example` (DecodeJSONExample: tf.train.Example messages written as
JSON, as the serialized protos).  Neither is differentiable.  Kernels:
flowlab.kernels.string_join_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["unsorted_segment_join", "decode_json_example"]


def _segment_join_shape(op: Operation) -> list[Any]:
    data, ids = op.inputs[0].shape, op.inputs[1].shape
    n = constant_value(op.inputs[2])
    if data.ndims is None or ids.ndims is None:
        return [TensorShape(None)]
    return [TensorShape([None if n is None else int(n)] + data.as_list()[ids.ndims:])]


op_def("UnsortedSegmentJoin", inputs=["inputs: string", "segment_ids: Tindices", "num_segments: Tnumsegments"],
       outputs=["output: string"],
       attrs=["separator: string = ''", "Tindices: {int32, int64}", "Tnumsegments: {int32, int64} = int32"],
       shape_fn=_segment_join_shape)
op_def("DecodeJSONExample", inputs=["json_examples: string"], outputs=["binary_examples: string"],
       shape_fn=lambda op: [op.inputs[0].shape])
not_differentiable("UnsortedSegmentJoin")
not_differentiable("DecodeJSONExample")


def unsorted_segment_join(inputs: Any, segment_ids: Any, num_segments: Any, separator: str = "",
                          name: str | None = None) -> Tensor:
    """The strings of `inputs` with equal `segment_ids` joined by `separator`.

    >>> tf.strings.unsorted_segment_join(["a", "b", "c"], [1, 0, 1], 2, "-")   # [b'b', b'a-c']
    """
    return apply_op("UnsortedSegmentJoin", inputs=convert_to_tensor(inputs, dtype=dtypes.string, name="inputs"),
                    segment_ids=convert_to_tensor(segment_ids, name="segment_ids"),
                    num_segments=convert_to_tensor(num_segments, name="num_segments"), separator=separator,
                    name=name or "UnsortedSegmentJoin")


def decode_json_example(json_examples: Any, name: str | None = None) -> Tensor:
    """Each JSON-written tf.train.Example as its binary serialization."""
    return apply_op("DecodeJSONExample", json_examples=convert_to_tensor(json_examples, dtype=dtypes.string,
                                                                         name="json_examples"),
                    name=name or "DecodeJSONExample")
