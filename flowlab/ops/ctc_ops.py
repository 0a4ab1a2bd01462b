"""Connectionist temporal classification helpers, built as TensorFlow builds them:
`tf.nn.collapse_repeated` (merge runs of a label into one, per sequence, with the new
lengths: masks, boolean_mask and a ScatterNd) and `tf.nn.ctc_unique_labels` (each
row's distinct labels, zero-padded, and every label's index among them: Unique in a
map_fn)."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.builder import convert_to_tensor

__all__ = ["collapse_repeated", "ctc_unique_labels"]


def _dim(t: Tensor, i: int) -> Any:
    d = t.shape.as_list()[i] if t.shape.ndims is not None else None
    return d if d else array_ops.shape(t)[i]


def collapse_repeated(labels: Any, seq_length: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """(labels with repeats merged, padded with 0s to the new longest length; new lengths).

    >>> tf.nn.collapse_repeated([[1, 1, 2, 2, 3]], [5])   # ([[1, 2, 3]], [3])
    """
    with get_default_graph().name_scope(name or "collapse_repeated_labels"):
        labels = convert_to_tensor(labels, name="labels")
        seq_length = convert_to_tensor(seq_length, name="seq_length")
        label_mask = array_ops.concat([array_ops.ones_like(labels[:, :1], dtypes.bool),
                                       math_ops.not_equal(labels[:, 1:], labels[:, :-1])], axis=1)
        seq_mask = array_ops.sequence_mask(seq_length, maxlen=_dim(labels, 1))
        label_mask = math_ops.logical_and(label_mask, seq_mask)
        new_seq_len = math_ops.reduce_sum(math_ops.cast(label_mask, dtypes.int32), axis=1)
        new_maxlen = math_ops.reduce_max(new_seq_len)
        idx_mask = array_ops.sequence_mask(new_seq_len, maxlen=new_maxlen)
        flat_labels = array_ops.reshape(labels, [-1])
        flat_label_mask = array_ops.reshape(label_mask, [-1])
        flat_idx_mask = array_ops.reshape(idx_mask, [-1])
        idx = math_ops.range(_dim(flat_idx_mask, 0))
        flat = slicing.scatter_nd(array_ops.expand_dims(slicing.boolean_mask(idx, flat_idx_mask), axis=1),
                                  slicing.boolean_mask(flat_labels, flat_label_mask),
                                  array_ops.shape(flat_idx_mask))
        batch = _dim(labels, 0)
        return array_ops.reshape(flat, [batch, new_maxlen]), math_ops.cast(new_seq_len, seq_length.dtype.base_dtype)


def ctc_unique_labels(labels: Any, name: str | None = None) -> list[Tensor]:
    """(unique labels per row as int64, zero-padded to the row length; int32 indices).

    >>> tf.nn.ctc_unique_labels([[3, 4, 4, 3]])   # ([[3, 4, 0, 0]], [[0, 1, 1, 0]])
    """
    from flowlab.ops.functional_ops import map_fn

    with get_default_graph().name_scope(name or "ctc_unique_labels"):
        labels = convert_to_tensor(labels, name="labels")

        def _unique(x: Tensor) -> list[Tensor]:
            y, idx = array_ops.unique(x)
            y = array_ops.pad(y, [[0, _dim(idx, 0) - _dim(y, 0)]])
            return [math_ops.cast(y, dtypes.int64), idx]

        return map_fn(_unique, labels, dtype=[dtypes.int64, dtypes.int32])
