"""Segment reductions (`tf.math.segment_sum`, `tf.math.unsorted_segment_sum`, ...).

Declared with TensorFlow's op types and attrs: the sorted family (SegmentSum,
SegmentMean, SegmentMax, SegmentMin: 1-D ids, increasing, output rows up to the last
id) and the unsorted one (UnsortedSegmentSum, UnsortedSegmentMax, UnsortedSegmentMin,
UnsortedSegmentProd: ids of any rank that is a prefix of the data's shape, negative
ids dropped, `num_segments` rows).  `unsorted_segment_mean` and `unsorted_segment_sqrt_n`
are composites, as in TensorFlow.  The gradients build TensorFlow's own graphs
(math_grad.py): a gather of the output gradient, masked by which inputs were selected
for max and min.  Kernels: `flowlab.kernels.segment_kernels`.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = [
    "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
    "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_prod", "unsorted_segment_mean", "unsorted_segment_sqrt_n",
]

_REAL = "{float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64}"
_NUM = "{float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, complex64, complex128}"


# --- shape functions ------------------------------------------------------------------
def _sorted_shape(op: Operation) -> list[Any]:
    data, ids = op.inputs[0].shape, op.inputs[1].shape
    if ids.ndims is not None and ids.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {ids.ndims}")
    if data.ndims is None:
        return [TensorShape(None)]
    if data.ndims < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank {data.ndims}")
    return [TensorShape([None] + data.as_list()[1:])]


def _unsorted_shape(op: Operation) -> list[Any]:
    data, ids, num = (t.shape for t in op.inputs)
    if num.ndims is not None and num.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {num.ndims}")
    if data.ndims is None or ids.ndims is None:
        return [TensorShape(None)]
    d, i = data.as_list(), ids.as_list()
    if len(i) > len(d):
        raise ValueError(f"Shape must be at least rank {len(i)} but is rank {len(d)}")
    for a, b in zip(d, i):
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    n = constant_value(op.inputs[2])
    return [TensorShape([None if n is None else int(n)] + d[len(i):])]


for _t, _types in (("SegmentSum", _NUM), ("SegmentMean", _NUM), ("SegmentMax", _REAL), ("SegmentMin", _REAL),
                   ("SegmentProd", _NUM)):
    op_def(_t, inputs=["data: T", "segment_ids: Tindices"], outputs=["output: T"],
           attrs=[f"T: {_types}", "Tindices: {int32, int64}"], shape_fn=_sorted_shape)
for _t, _types in (("UnsortedSegmentSum", _NUM), ("UnsortedSegmentMax", _REAL),
                   ("UnsortedSegmentMin", _REAL), ("UnsortedSegmentProd", _NUM)):
    op_def(_t, inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
           outputs=["output: T"],
           attrs=[f"T: {_types}", "Tindices: {int32, int64}", "Tnumsegments: {int32, int64} = int32"],
           shape_fn=_unsorted_shape)


# --- builders -------------------------------------------------------------------------
def _sorted(op_type: str, data: Any, segment_ids: Any, name: str | None) -> Tensor:
    return apply_op(op_type, data=data, segment_ids=segment_ids, name=name or op_type)


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Sums of the rows of `data` with equal (sorted) `segment_ids`."""
    return _sorted("SegmentSum", data, segment_ids, name)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Means of the rows of `data` with equal (sorted) `segment_ids`; 0 for empty ones."""
    return _sorted("SegmentMean", data, segment_ids, name)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Maxima of the rows of `data` with equal (sorted) `segment_ids`; 0 for empty ones."""
    return _sorted("SegmentMax", data, segment_ids, name)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Minima of the rows of `data` with equal (sorted) `segment_ids`; 0 for empty ones."""
    return _sorted("SegmentMin", data, segment_ids, name)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Products of the rows of `data` with equal (sorted) `segment_ids`; 1 for empty ones."""
    return _sorted("SegmentProd", data, segment_ids, name)


def _unsorted(op_type: str, data: Any, segment_ids: Any, num_segments: Any, name: str | None) -> Tensor:
    return apply_op(op_type, data=data, segment_ids=segment_ids, num_segments=num_segments,
                    name=name or op_type)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """Sums over `segment_ids` in any order; negative ids are dropped."""
    return _unsorted("UnsortedSegmentSum", data, segment_ids, num_segments, name)


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """Maxima over `segment_ids`; an empty segment gives the dtype's lowest value."""
    return _unsorted("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """Minima over `segment_ids`; an empty segment gives the dtype's highest value."""
    return _unsorted("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """Products over `segment_ids`; an empty segment gives 1."""
    return _unsorted("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def _segment_counts(data: Tensor, segment_ids: Tensor, num_segments: Tensor) -> Tensor:
    """Rows per segment (at least 1), shaped to broadcast against the sums (TF's _unsorted_segment_N)."""
    ones = array_ops.ones(array_ops.shape(segment_ids), dtype=data.dtype)
    n = unsorted_segment_sum(ones, segment_ids, num_segments)
    tail = array_ops.ones(array_ops.reshape(math_ops.subtract(array_ops.rank(data), array_ops.rank(segment_ids)), [1]),
                          dtype=num_segments.dtype)
    n = array_ops.reshape(n, array_ops.concat([array_ops.reshape(num_segments, [1]), tail], 0))
    return math_ops.maximum(n, math_ops.cast(1, n.dtype))


def _composite_mean(data: Any, segment_ids: Any, num_segments: Any, name: str | None,
                    default: str, sqrt: bool) -> Tensor:
    g = graph_of([data, segment_ids, num_segments])
    with g.name_scope(name or default):
        data = convert_to_tensor(data, name="data")
        segment_ids = convert_to_tensor(segment_ids, name="segment_ids")
        num_segments = convert_to_tensor(num_segments, name="num_segments")
        n = _segment_counts(data, segment_ids, num_segments)
        if sqrt:
            n = math_ops.sqrt(n)
        return math_ops.truediv(unsorted_segment_sum(data, segment_ids, num_segments), n)


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """Means over `segment_ids`; an empty segment gives 0."""
    return _composite_mean(data, segment_ids, num_segments, name, "UnsortedSegmentMean", sqrt=False)


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None) -> Tensor:
    """Sums over `segment_ids` divided by the square root of each segment's size."""
    return _composite_mean(data, segment_ids, num_segments, name, "UnsortedSegmentSqrtN", sqrt=True)


# --- gradients (TensorFlow's math_grad.py) --------------------------------------------
@gradient("SegmentSum")
def _segment_sum_grad(op: Operation, grad: Tensor) -> Any:
    return [slicing.gather(grad, op.inputs[1]), None]


@gradient("SegmentMean")
def _segment_mean_grad(op: Operation, grad: Tensor) -> Any:
    data, ids = op.inputs
    rank_tail = array_ops.reshape(math_ops.subtract(array_ops.rank(data), 1), [1])
    ones_shape = array_ops.concat([array_ops.shape(ids), array_ops.fill(rank_tail, 1)], 0)
    ones = array_ops.ones(ones_shape, dtype=grad.dtype)
    scaled = math_ops.truediv(grad, segment_sum(ones, ids))
    return [slicing.gather(scaled, ids), None]


def _segment_min_or_max_grad(op: Operation, grad: Tensor) -> Any:
    data, ids = op.inputs
    zeros = array_ops.zeros_like(data)
    is_selected = math_ops.equal(data, slicing.gather(op.outputs[0], ids))
    num_selected = segment_sum(math_ops.cast(is_selected, grad.dtype), ids)
    gathered = slicing.gather(math_ops.truediv(grad, num_selected), ids)
    return [array_ops.where(is_selected, gathered, zeros), None]


gradient("SegmentMax")(_segment_min_or_max_grad)
gradient("SegmentMin")(_segment_min_or_max_grad)


def _gather_drop_negatives(params: Tensor, ids: Tensor | None, zero_clipped: Tensor | None = None,
                           is_positive: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Rows `params[ids]`, zero where an id is negative (TF's _GatherDropNegatives)."""
    if zero_clipped is None:
        assert ids is not None
        zero_clipped = math_ops.maximum(ids, array_ops.zeros_like(ids))
    gathered = slicing.gather(params, zero_clipped)
    if is_positive is None:
        assert ids is not None
        is_positive = math_ops.greater_equal(ids, 0)
        shape = array_ops.shape(is_positive)
        extra = math_ops.subtract(array_ops.rank(gathered), array_ops.rank(is_positive))
        ones = array_ops.ones(array_ops.reshape(extra, [1]), dtype=shape.dtype)
        is_positive = array_ops.reshape(is_positive, array_ops.concat([shape, ones], 0))
        is_positive = math_ops.logical_and(is_positive, array_ops.ones_like(gathered, dtype=dtypes.bool))
    out = array_ops.where(is_positive, gathered, array_ops.zeros_like(gathered))
    return out, zero_clipped, is_positive


@gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op: Operation, grad: Tensor) -> Any:
    return [_gather_drop_negatives(grad, op.inputs[1])[0], None, None]


def _unsorted_min_or_max_grad(op: Operation, grad: Tensor) -> Any:
    data, ids, num = op.inputs
    gathered_out, zero_clipped, is_positive = _gather_drop_negatives(op.outputs[0], ids)
    is_selected = math_ops.logical_and(math_ops.equal(data, gathered_out), is_positive)
    num_selected = unsorted_segment_sum(math_ops.cast(is_selected, grad.dtype), ids, num)
    weighted = math_ops.truediv(grad, num_selected)
    gathered, _, _ = _gather_drop_negatives(weighted, None, zero_clipped, is_positive)
    return [array_ops.where(is_selected, gathered, array_ops.zeros_like(gathered)), None, None]


gradient("UnsortedSegmentMax")(_unsorted_min_or_max_grad)
gradient("UnsortedSegmentMin")(_unsorted_min_or_max_grad)


@gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op: Operation, grad: Tensor) -> Any:
    data, ids, num = op.inputs
    is_zero = math_ops.equal(data, math_ops.cast(0, data.dtype))
    num_zeros = unsorted_segment_sum(math_ops.cast(is_zero, dtypes.int32), ids, num)
    grad = array_ops.where(math_ops.greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero_data = array_ops.where(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = unsorted_segment_prod(non_zero_data, ids, num)
    zero_clipped = math_ops.maximum(ids, array_ops.zeros_like(ids))
    gathered_prod = slicing.gather(op.outputs[0], zero_clipped)
    gathered_non_zero_prod = slicing.gather(non_zero_prod, zero_clipped)
    prod_divided_by_el = math_ops.truediv(gathered_prod, data)
    partial = array_ops.where(is_zero, gathered_non_zero_prod, prod_divided_by_el)
    gathered_grad = _gather_drop_negatives(grad, ids, zero_clipped)[0]
    return [math_ops.multiply(gathered_grad, partial), None, None]


@gradient("SegmentProd")
def _segment_prod_grad(op: Operation, grad: Tensor) -> list[Any]:
    # TensorFlow's: the product of the others, with at most one zero in a segment
    # handled by the product of the non-zero elements (two zeros: a zero gradient).
    data, segment_ids = op.inputs
    is_zero = math_ops.equal(data, array_ops.zeros_like(data))
    num_zeros = segment_sum(math_ops.cast(is_zero, dtypes.int32), segment_ids)
    grad = array_ops.where_v2(math_ops.greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero_data = array_ops.where_v2(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = segment_prod(non_zero_data, segment_ids)
    gathered_prod = slicing.gather(op.outputs[0], segment_ids)
    gathered_non_zero_prod = slicing.gather(non_zero_prod, segment_ids)
    prod_divided_by_el = gathered_prod / non_zero_data
    partial = array_ops.where_v2(is_zero, gathered_non_zero_prod, prod_divided_by_el)
    return [slicing.gather(grad, segment_ids) * partial, None]
