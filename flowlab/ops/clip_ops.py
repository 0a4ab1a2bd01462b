"""Norms and gradient clipping: `tf.norm`, `tf.clip_by_norm`, `tf.global_norm`,
`tf.clip_by_global_norm`, `tf.clip_by_average_norm`.

Composites of existing ops, built as TensorFlow builds them (clip_ops.py and
linalg_ops.py) so that values, dtypes and op names agree: `clip_by_norm` guards the
square root of a zero sum with a `where`, `global_norm` sums `L2Loss`es, and
`clip_by_global_norm` scales by `clip_norm * min(1 / norm, 1 / clip_norm)` plus
`norm - norm`, which turns the scale into NaN when the norm is not finite.
IndexedSlices keep their indices: only their values are scaled.  (`clip_by_value` is
in `math_ops`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, math_ops, nn_ops
from flowlab.ops.builder import convert_to_tensor, graph_of
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.ops.nn_ops import _name_scope

__all__ = ["norm", "clip_by_norm", "global_norm", "clip_by_global_norm", "clip_by_average_norm"]


def _values(t: Any, name: str) -> Tensor:
    return convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t, name=name)


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """`t * clip_norm / max(l2norm(t, axes), clip_norm)`."""
    with _name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = _values(t, "t")
        l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = array_ops.where(pred, l2sum, array_ops.ones_like(l2sum))
        l2norm = array_ops.where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        clipped = identity(intermediate / math_ops.maximum(l2norm, clip_norm), name=scope)
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clipped, t.indices, t.dense_shape)
    return clipped


def _sequence(t_list: Any, message: str) -> list[Any]:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(message)
    return list(t_list)


def global_norm(t_list: Any, name: str | None = None) -> Tensor:
    """sqrt(sum of the squared L2 norms of the tensors); None entries are skipped."""
    t_list = _sequence(t_list, "t_list should be a sequence")
    with _name_scope(name, "global_norm", t_list):
        values = [None if t is None else _values(t, f"t_{i}") for i, t in enumerate(t_list)]
        halves = []
        for v in values:
            if v is not None:
                with v.graph.colocate_with(v.op):
                    halves.append(nn_ops.l2_loss(v))
        half = math_ops.reduce_sum(array_ops.stack(halves))
        return math_ops.sqrt(half * constant(2.0, dtype=half.dtype), name="global_norm")


def clip_by_global_norm(t_list: Any, clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list[Any], Tensor]:
    """(the tensors scaled by clip_norm / max(global_norm, clip_norm), the global norm)."""
    t_list = _sequence(t_list, f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with _name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as scope:
        one = constant(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * math_ops.minimum(1.0 / use_norm, one / clip_norm)
        scale = scale_for_finite + (use_norm - use_norm)
        values = [None if t is None else _values(t, f"t_{i}") for i, t in enumerate(t_list)]
        clipped: list[Any] = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with v.graph.colocate_with(v.op):
                clipped.append(identity(v * math_ops.cast(scale, v.dtype), name=f"{scope}_{i}"))
    out = [IndexedSlices(c, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) else c
           for c, t in zip(clipped, t_list)]
    return out, use_norm


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """`t * clip_norm / max(l2norm(t) / size(t), clip_norm)` (deprecated in TensorFlow)."""
    with _name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = convert_to_tensor(t, name="t")
        n_element = math_ops.cast(array_ops.size(t), dtypes.float32)
        l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(t * t, math_ops.range(array_ops.rank(t))))
        return identity(t * clip_norm * math_ops.minimum(l2norm_inv * n_element, constant(1.0) / clip_norm),
                        name=scope)


def _spectral_norm(tensor: Tensor, axis: tuple[int, int]) -> Tensor:
    """Largest singular value over the two `axis` dimensions, kept as size-1 dims: the
    two axes are moved last for Svd, then moved back (TensorFlow's perm_before/after)."""
    from flowlab.ops.linalg_ops import svd

    rank = tensor.shape.ndims
    if rank is None:
        raise NotImplementedError("flowlab's spectral norm (ord=2 over two axes) needs a known rank")
    pos = [a + rank if a < 0 else a for a in axis]
    perm_before = [i for i in range(rank) if i not in pos] + pos
    perm_after = [perm_before.index(i) for i in range(rank)]
    permed = array_ops.transpose(tensor, perm=perm_before)
    s = svd(permed, compute_uv=False)
    top = array_ops.expand_dims(math_ops.reduce_max(math_ops.abs(s), axis=-1, keepdims=True), axis=-1)
    return array_ops.transpose(top, perm=perm_after)


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: Any = None,  # noqa: A002
         name: str | None = None, keep_dims: Any = None) -> Tensor:
    """Vector norms (ord 'euclidean'/'fro'/2, 1, inf or p > 0) and matrix norms over a
    pair of axes (ord 'euclidean'/'fro', 1, inf, and 2: the largest singular value)."""
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'")
        keepdims = keep_dims
    keepdims = bool(keepdims)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix:
        axis = tuple(axis)
        if axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in ("euclidean", "fro", 1, 2, np.inf):
            raise ValueError(f"'ord' must be a supported matrix norm in {['euclidean', 'fro', 1, 2, np.inf]}, "
                             f"got {ord}")
    else:
        if not (isinstance(axis, int) or axis is None):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if isinstance(ord, str) and ord != "euclidean" or not isinstance(ord, str) and ord <= 0:
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        if axis is not None:
            axis = (axis,)
    g = graph_of([tensor])
    with g.as_default(), g.name_scope(name or "norm"):
        tensor = convert_to_tensor(tensor)
        if ord in ("fro", "euclidean", 2, 2.0):
            if is_matrix and ord in (2, 2.0):
                result = _spectral_norm(tensor, axis)
            else:
                result = math_ops.sqrt(math_ops.reduce_sum(tensor * math_ops.conj(tensor), axis, keepdims=True))
        else:
            result = math_ops.abs(tensor)
            if ord == 1:
                result = math_ops.reduce_sum(result, None if axis is None else axis[0], keepdims=True)
                if is_matrix:
                    result = math_ops.reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if is_matrix:
                    result = math_ops.reduce_sum(result, axis[1], keepdims=True)
                result = math_ops.reduce_max(result, None if axis is None else axis[0], keepdims=True)
            else:
                result = math_ops.pow(math_ops.reduce_sum(math_ops.pow(result, ord), axis, keepdims=True),
                                      1.0 / ord)
        if not keepdims:
            result = array_ops.squeeze(result, axis)
        return result
