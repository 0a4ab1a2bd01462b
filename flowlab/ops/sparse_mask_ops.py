"""`tf.sparse_mask`: the slices of an IndexedSlices whose index is not masked, built as
TensorFlow builds it (ListDiff of the indices -- flowlab.ops.unique_ops.setdiff1d --
then a Gather of the kept values)."""

from __future__ import annotations

from typing import Any

from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.ops.slicing import gather
from flowlab.ops.unique_ops import setdiff1d

__all__ = ["sparse_mask"]


def sparse_mask(a: IndexedSlices, mask_indices: Any, name: str | None = None) -> IndexedSlices:
    """The slices of `a` whose index is not in `mask_indices` (`tf.sparse_mask`).

        >>> sparse_mask(IndexedSlices(v, [12, 26, 37, 45], [50, 2]), [12, 45])  # rows 26, 37
    """
    g = a.values.graph
    with g.as_default(), g.name_scope(name or "sparse_mask") as scope:
        out_indices, to_gather = setdiff1d(a.indices, mask_indices)
        out_values = gather(a.values, to_gather, name=scope)
        return IndexedSlices(out_values, out_indices, a.dense_shape)
