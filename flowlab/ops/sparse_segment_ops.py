"""Sparse segment reductions (`tf.sparse.segment_sum`, `tf.sparse_segment_mean`,
`tf.sparse_segment_sqrt_n`): rows `data[indices[i]]` reduced by the sorted
`segment_ids[i]`, TensorFlow's ops SparseSegment{Sum,Mean,SqrtN} and their
...WithNumSegments forms (`num_segments` output rows instead of last id + 1).

The gradient ops are declared here too: SparseSegment*Grad (a dense gradient of
`output_dim0` rows) and SparseSegment*GradV2 (the rows of the sorted unique indices,
for an IndexedSlices gradient; used when the forward op has `sparse_gradient`, as
`embedding_lookup_sparse` builds it).  Kernels: flowlab.kernels.sparse_segment_kernels;
gradients: flowlab.ops.sparse_grad.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_value
from flowlab.ops.op_def import op_def

__all__ = ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"]

_REAL = "{float32, float64, int32, uint8, int16, int8, int64, uint16, float16, uint32, uint64}"
_FLOAT = "{float16, float32, float64}"
_IDX = ["Tidx: {int32, int64} = int32", "Tsegmentids: {int32, int64} = int32"]


def _rows_shape(op: Operation, rows: Any) -> list[Any]:
    data, ind = op.inputs[0].shape, op.inputs[1].shape
    if ind.ndims is not None and ind.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {ind.ndims}")
    if data.ndims is None:
        return [TensorShape(None)]
    return [TensorShape([rows] + data.as_list()[1:])]


def _num_rows(op: Operation, i: int) -> int | None:
    v = constant_value(op.inputs[i])
    return None if v is None else int(v)


for _t, _types in (("Sum", _REAL), ("Mean", _FLOAT), ("SqrtN", _FLOAT)):
    op_def(f"SparseSegment{_t}", inputs=["data: T", "indices: Tidx", "segment_ids: Tsegmentids"],
           outputs=["output: T"], attrs=[f"T: {_types}", *_IDX, "sparse_gradient: bool = false"],
           shape_fn=lambda op: _rows_shape(op, None))
    op_def(f"SparseSegment{_t}WithNumSegments",
           inputs=["data: T", "indices: Tidx", "segment_ids: Tsegmentids", "num_segments: Tnumsegments"],
           outputs=["output: T"],
           attrs=[f"T: {_types}", "Tidx: {int32, int64} = int32", "Tnumsegments: {int32, int64} = int32",
                  "Tsegmentids: {int32, int64} = int32", "sparse_gradient: bool = false"],
           shape_fn=lambda op: _rows_shape(op, _num_rows(op, 3)))
    op_def(f"SparseSegment{_t}Grad",
           inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "output_dim0: int32"],
           outputs=["output: T"], attrs=[f"T: {_FLOAT}", *_IDX],
           shape_fn=lambda op: _rows_shape(op, _num_rows(op, 3)))
    op_def(f"SparseSegment{_t}GradV2",
           inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "dense_output_dim0: int32"],
           outputs=["output: T", "sorted_unique_indices: Tidx"], attrs=[f"T: {_FLOAT}", *_IDX],
           shape_fn=lambda op: _rows_shape(op, None) + [TensorShape([None])])


def _segment(kind: str, data: Any, indices: Any, segment_ids: Any, name: str | None,
             num_segments: Any, sparse_gradient: bool) -> Tensor:
    if num_segments is not None:
        op_type = f"SparseSegment{kind}WithNumSegments"
        return apply_op(op_type, name=name or op_type, data=data, indices=indices,  # type: ignore[no-any-return]
                        segment_ids=segment_ids, num_segments=num_segments,
                        sparse_gradient=sparse_gradient)
    op_type = f"SparseSegment{kind}"
    return apply_op(op_type, name=name or op_type, data=data, indices=indices,  # type: ignore[no-any-return]
                    segment_ids=segment_ids, sparse_gradient=sparse_gradient)


def sparse_segment_sum(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
                       num_segments: Any = None, sparse_gradient: bool = False) -> Tensor:
    """Sums of the rows `data[indices]` with equal sorted `segment_ids`.

        >>> sparse_segment_sum(c, [0, 1], [0, 0])   # c[0] + c[1], one row
    """
    return _segment("Sum", data, indices, segment_ids, name, num_segments, sparse_gradient)


def sparse_segment_mean(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
                        num_segments: Any = None, sparse_gradient: bool = False) -> Tensor:
    """Means of the rows `data[indices]` by sorted `segment_ids` (0 for an empty segment)."""
    return _segment("Mean", data, indices, segment_ids, name, num_segments, sparse_gradient)


def sparse_segment_sqrt_n(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
                          num_segments: Any = None, sparse_gradient: bool = False) -> Tensor:
    """Sums of the rows `data[indices]` by sorted `segment_ids`, divided by sqrt(count)."""
    return _segment("SqrtN", data, indices, segment_ids, name, num_segments, sparse_gradient)
