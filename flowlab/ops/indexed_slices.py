"""IndexedSlices: a sparse slice of rows of a dense tensor, as gradients of Gather.

`IndexedSlices(values, indices, dense_shape)` stands for the dense tensor whose rows
`indices[i]` are `values[i]` (duplicate indices add up) and whose other rows are
zero.  Gradients of row lookups (Gather, embedding lookups) are IndexedSlices so that
an optimizer can update only the touched rows; a consumer that needs a dense tensor
converts one through the registered tensor conversion function, which builds a
scatter-add (ScatterNd) into `dense_shape`.  As in TensorFlow, that conversion warns
only when the dense shape is unknown or the result would be very large.

`sess.run(slices)` returns an `IndexedSlicesValue` (a namedtuple of NumPy arrays)
through `_fetch_parts`, which flowlab.runtime.client.fetches understands.
"""

from __future__ import annotations

import collections
import warnings
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import convert_to_tensor, register_tensor_conversion_function
from flowlab.ops.const_fold import constant_value

__all__ = ["IndexedSlices", "IndexedSlicesValue", "convert_to_tensor_or_indexed_slices"]

# Dense conversions above this many elements warn (TensorFlow's threshold).
_LARGE_SPARSE_NUM_ELEMENTS = 100_000_000


class IndexedSlicesValue(collections.namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])):
    """The value of an IndexedSlices after `Session.run`: NumPy arrays."""

    def __str__(self) -> str:
        return f"IndexedSlicesValue(values={self.values}, indices={self.indices}, dense_shape={self.dense_shape})"


class IndexedSlices:
    """Rows `indices` of a dense tensor of shape `dense_shape`, with values `values`."""

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Tensor | None = None) -> None:
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    # --- the parts ----------------------------------------------------------------
    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Tensor | None:
        return self._dense_shape

    # --- what it shares with its values --------------------------------------------
    @property
    def name(self) -> str:
        return self._values.name

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def op(self) -> Any:
        return self._values.op

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def graph(self) -> Any:
        return self._values.graph

    @property
    def shape(self) -> TensorShape:
        """The static dense shape: `dense_shape` where it is known statically, else
        the values' row shape under an unknown number of rows."""
        if self._dense_shape is not None:
            v = constant_value(self._dense_shape)
            if v is not None:
                return TensorShape([int(d) for d in np.asarray(v).reshape(-1)])
        vs = self._values.shape
        if vs.ndims is None:
            return TensorShape(None)
        return TensorShape([None] + vs.as_list()[1:])

    def get_shape(self) -> TensorShape:
        return self.shape

    def __repr__(self) -> str:
        ds = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{ds})"

    def __neg__(self) -> IndexedSlices:
        from flowlab.ops import math_ops

        return IndexedSlices(math_ops.negative(self._values), self._indices, self._dense_shape)

    # --- fetching -------------------------------------------------------------------
    def _fetch_parts(self) -> tuple[list[Tensor], Any]:
        if self._dense_shape is None:
            return [self._values, self._indices], lambda v, i: IndexedSlicesValue(v, i, None)
        return [self._values, self._indices, self._dense_shape], IndexedSlicesValue

    def consumers(self) -> list[Any]:
        return self._values.consumers()


def _dense_shape_tensor(s: IndexedSlices) -> Tensor:
    if s.dense_shape is not None:
        return s.dense_shape
    raise ValueError(
        f"Tensor conversion requested for IndexedSlices without dense_shape: {s!r}"
    )


def _indexed_slices_to_tensor(value: IndexedSlices, dtype: Any = None, name: str | None = None,
                              as_ref: bool = False) -> Tensor:
    """Scatter-add the rows into a dense tensor (what a dense consumer needs)."""
    from flowlab.ops import array_ops
    from flowlab.ops.builder import apply_op

    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
        raise ValueError(
            f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for IndexedSlices "
            f"with dtype {value.dtype.name}"
        )
    dense_shape = _dense_shape_tensor(value)
    static = value.shape
    if not static.is_fully_defined():
        warnings.warn(
            "Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
            "This may consume a large amount of memory.",
            UserWarning,
            stacklevel=3,
        )
    elif static.num_elements() >= _LARGE_SPARSE_NUM_ELEMENTS:
        warnings.warn(
            f"Converting sparse IndexedSlices{static} to a dense Tensor with "
            f"{static.num_elements()} elements. This may consume a large amount of memory.",
            UserWarning,
            stacklevel=3,
        )
    g = value.values.graph
    with g.name_scope(name or "IndexedSlicesToDense"):
        indices = array_ops.expand_dims(value.indices, -1)
        shape = dense_shape
        if shape.dtype != indices.dtype:
            from flowlab.ops import math_ops

            shape = math_ops.cast(shape, indices.dtype)
        return apply_op("ScatterNd", indices=indices, updates=value.values, shape=shape, name="ScatterNd")


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor, priority=50)


def convert_to_tensor_or_indexed_slices(value: Any, dtype: Any = None, name: str | None = None) -> Any:
    """`value` itself if it is IndexedSlices, else `convert_to_tensor(value)`."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for "
                f"IndexedSlices with dtype {value.dtype.name}"
            )
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def as_indexed_slices(x: Any) -> IndexedSlices:
    """A dense tensor as IndexedSlices over all its rows (for mixed aggregation)."""
    if isinstance(x, IndexedSlices):
        return x
    from flowlab.ops import array_ops, math_ops, slicing

    x = convert_to_tensor(x)
    shape = array_ops.shape(x)
    rows = slicing.strided_slice(shape, [0], [1], shrink_axis_mask=1)
    return IndexedSlices(x, math_ops.range(rows), shape)
