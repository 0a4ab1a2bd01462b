"""Sorting, searching and counting: `tf.sort` / `tf.argsort` (TopKV2 over the last
axis, as TensorFlow builds them), `tf.roll` (Roll), `tf.bincount` (DenseBincount
behind TensorFlow 1.x's size computation), `tf.searchsorted` (LowerBound /
UpperBound on 2-D reshapes) and `tf.histogram_fixed_width` (HistogramFixedWidth).

Ascending order is a descending TopKV2 of a transformed input: -x for floats,
-x - 1 (bitwise not, no overflow at the minimum) for signed integers, max - x for
unsigned ones; a sort along another axis swaps it with the last one around TopKV2.
Roll has TensorFlow's gradient (roll back); the counting and searching ops have none.
Kernels: `flowlab.kernels.sort_kernels`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, nn_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["sort", "argsort", "roll", "bincount", "searchsorted", "histogram_fixed_width"]


def _roll_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    for t in op.inputs[1:]:
        if t.shape.ndims is not None and t.shape.ndims > 1:
            raise ValueError(f"Shape must be at most rank 1 but is rank {t.shape.ndims}")
    a, b = op.inputs[1].shape.as_tuple(), op.inputs[2].shape.as_tuple()
    if a is not None and b is not None and len(a) == len(b) == 1 and None not in (a[0], b[0]) and a[0] != b[0]:
        raise ValueError(f"Dimension 0 in both shapes must be equal, but are {a[0]} and {b[0]}. Shapes are "
                         f"[{a[0]}] and [{b[0]}].")
    return [s]


def _bincount_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    size = constant_value(op.inputs[1])
    if s.ndims is not None and s.ndims > 2:
        raise ValueError(f"Shape must be at most rank 2 but is rank {s.ndims}")
    n = None if size is None else int(size)
    if s.ndims is None:
        return [TensorShape(None)]
    return [TensorShape([n] if s.ndims <= 1 else [s.as_tuple()[0], n])]  # type: ignore[index]


def _bound_shape(op: Operation) -> list[Any]:
    a, v = op.inputs[0].shape, op.inputs[1].shape
    for s in (a, v):
        if s.ndims is not None and s.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {s.ndims}")
    return [v]


def _histogram_shape(op: Operation) -> list[Any]:
    n = constant_value(op.inputs[2])
    return [TensorShape([None if n is None else int(n)])]


op_def("Roll", inputs=["input: T", "shift: Tshift", "axis: Taxis"], outputs=["output: T"],
       attrs=["T: all", "Tshift: {int32, int64}", "Taxis: {int32, int64}"], shape_fn=_roll_shape)
op_def("DenseBincount", inputs=["input: Tidx", "size: Tidx", "weights: T"], outputs=["output: T"],
       attrs=["Tidx: {int32, int64}", "T: {int32, int64, float32, float64}", "binary_output: bool = false"],
       shape_fn=_bincount_shape)
for _name in ("LowerBound", "UpperBound"):
    op_def(_name, inputs=["sorted_inputs: T", "values: T"], outputs=["output: out_type"],
           attrs=["T: type", "out_type: {int32, int64} = int32"], shape_fn=_bound_shape)
    not_differentiable(_name)
op_def("HistogramFixedWidth", inputs=["values: T", "value_range: T", "nbins: int32"], outputs=["out: dtype"],
       attrs=["T: {int32, int64, float32, float64}", "dtype: {int32, int64} = int32"], shape_fn=_histogram_shape)
not_differentiable("DenseBincount")
not_differentiable("HistogramFixedWidth")


@gradient("Roll")
def _roll_grad(op: Operation, grad: Any) -> Any:
    return [roll(grad, -op.inputs[1], op.inputs[2]), None, None]


# --- sort / argsort -------------------------------------------------------------------------
def _descending(values: Tensor, axis: int, return_argsort: bool) -> Tensor:
    k = array_ops.shape(values)[axis]
    rank = values.shape.ndims
    if axis == -1 or (rank is not None and axis + 1 == rank):
        top_k_input, transposition = values, None
    else:
        if rank is None:
            raise NotImplementedError("flowlab's sort along an axis other than the last needs a known rank")
        if axis < 0:
            axis += rank
        transposition = convert_to_tensor(
            np.r_[np.arange(axis), [rank - 1], np.arange(axis + 1, rank - 1), [axis]].astype(np.int64),
            name="transposition")
        top_k_input = array_ops.transpose(values, transposition)
    vals, idx = nn_ops.top_k(top_k_input, k)
    out = idx if return_argsort else vals
    if transposition is not None:
        # A single swap is its own inverse.
        out = array_ops.transpose(out, transposition)
    return out


def _sort_or_argsort(values: Any, axis: Any, direction: str, return_argsort: bool) -> Tensor:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Argument `direction` should be one of {{'ASCENDING', 'DESCENDING'}}. "
                         f"Received: direction={direction}")
    axis_t = convert_to_tensor(axis, name="axis")
    axis_static = constant_value(axis_t)
    if axis_t.shape.ndims not in (None, 0) or axis_static is None:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis}.")
    axis = int(axis_static)
    values = convert_to_tensor(values, name="values")
    if direction == "DESCENDING":
        return _descending(values, axis, return_argsort)
    dt = values.dtype.base_dtype
    if dt.is_unsigned:
        top = convert_to_tensor(np.iinfo(dt.as_numpy_dtype).max, dtype=dt)
        res = _descending(top - values, axis, return_argsort)
        return res if return_argsort else top - res
    if dt.is_integer:
        res = _descending(-values - 1, axis, return_argsort)
        return res if return_argsort else -res - 1
    res = _descending(-values, axis, return_argsort)
    return res if return_argsort else -res


def sort(values: Any, axis: Any = -1, direction: str = "ASCENDING", name: str | None = None) -> Tensor:
    """The values sorted along `axis`: `tf.sort([3, 1, 2])` is [1, 2, 3]."""
    g = graph_of([values])
    with g.as_default(), g.name_scope(name or "sort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=False)


def argsort(values: Any, axis: Any = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """Indices that sort `values` along `axis` (int32); equal values keep their order."""
    del stable  # TopKV2 already puts the lower index first among ties
    g = graph_of([values])
    with g.as_default(), g.name_scope(name or "argsort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=True)


# --- roll, bincount, searchsorted, histogram ------------------------------------------------
def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Rotate elements along `axis` by `shift` (several axes at once with lists)."""
    return apply_op("Roll", input=input, shift=shift, axis=axis, name=name or "Roll")


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """Count (or sum `weights` of) each value 0..max(arr) of a non-negative int32
    array; the length is max(arr) + 1, at least `minlength`, at most `maxlength`."""
    g = graph_of([arr, weights])
    with g.as_default(), g.name_scope(name or "bincount"):
        arr = convert_to_tensor(arr, name="arr", dtype=dtypes.int32)
        n = array_ops.size(arr)
        has_input = math_ops.cast(math_ops.greater(n, 0), arr.dtype)
        output_size = has_input * (math_ops.reduce_max(arr) + 1)
        if minlength is not None:
            output_size = math_ops.maximum(convert_to_tensor(minlength, dtype=arr.dtype, name="minlength"),
                                           output_size)
        if maxlength is not None:
            output_size = math_ops.minimum(convert_to_tensor(maxlength, dtype=arr.dtype, name="maxlength"),
                                           output_size)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            weights = array_ops.reshape(weights, [-1])
        else:
            weights = convert_to_tensor(np.zeros(0, dtypes.as_dtype(dtype).as_numpy_dtype))
        arr = array_ops.reshape(arr, [-1])
        return apply_op("DenseBincount", input=arr, size=output_size, weights=weights, binary_output=False,
                        name="DenseBincount")


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = dtypes.int32,
                 name: str | None = None) -> Tensor:
    """For each value, the index where it would go in the innermost sorted rows:
    before equal entries (side "left", LowerBound) or after them ("right", UpperBound)."""
    if side not in ("left", "right"):
        raise ValueError(f"Argument `side` must be either 'right' or 'left'. Received: `side` = '{side}'.")
    g = graph_of([sorted_sequence, values])
    with g.as_default():
        sorted_sequence = convert_to_tensor(sorted_sequence)
        values = convert_to_tensor(values, dtype=sorted_sequence.dtype.base_dtype)
        seq_size = _last_dim(sorted_sequence)
        val_size = _last_dim(values)
        seq_2d = array_ops.reshape(sorted_sequence, array_ops.stack([-1, seq_size]) if isinstance(seq_size, Tensor)
                                   else [-1, seq_size])
        val_2d = array_ops.reshape(values, array_ops.stack([-1, val_size]) if isinstance(val_size, Tensor)
                                   else [-1, val_size])
        op = "UpperBound" if side == "right" else "LowerBound"
        out = apply_op(op, sorted_inputs=seq_2d, values=val_2d, out_type=out_type, name=name or op)
        shape = values.shape.as_tuple()
        return array_ops.reshape(out, list(shape) if shape is not None and None not in shape
                                 else array_ops.shape(values))


def _last_dim(t: Tensor) -> Any:
    s = t.shape.as_tuple()
    if s is not None and s and s[-1] is not None:
        return s[-1]
    return array_ops.shape(t)[-1]


def histogram_fixed_width(values: Any, value_range: Any, nbins: Any = 100, dtype: Any = dtypes.int32,
                          name: str | None = None) -> Tensor:
    """Counts of `values` in `nbins` equal bins over value_range [lo, hi]; values
    outside go to the first or last bin."""
    g = graph_of([values, value_range, nbins])
    with g.as_default(), g.name_scope(name or "histogram_fixed_width") as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype.base_dtype, name="value_range")
        return apply_op("HistogramFixedWidth", values=values, value_range=value_range,
                        nbins=convert_to_tensor(nbins, dtype=dtypes.int32, name="nbins"), dtype=dtype, name=scope)
