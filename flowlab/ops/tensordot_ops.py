"""`tf.tensordot`, `tf.eye` and `tf.meshgrid`: composites of existing ops.

`tensordot` is TensorFlow's construction (math_ops.py): move the contracted axes of
`a` last and of `b` first, reshape both to matrices, one MatMul, reshape to the free
dimensions (skipped when the MatMul already has that shape), under a "Tensordot" scope.
`meshgrid` is TensorFlow's reshape-and-multiply-by-ones.  `eye` gives TensorFlow's
values and final op names ("eye/diag" when square, else "eye/set_diag") from a comparison of two ranges
instead of the MatrixDiag ops, which flowlab does not have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.builder import convert_to_tensor, graph_of
from flowlab.ops.core_ops import identity

__all__ = ["tensordot", "eye", "meshgrid"]


def _axes(a: Tensor, axes: Any) -> tuple[list[int], list[int]]:
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {axes}.")
        n = a.shape.ndims
        if n is None:
            raise NotImplementedError(f"tensordot with an integer `axes` needs the static rank of {a.name}; "
                                      "give it one (set_shape or reshape), or pass the axes as lists")
        if axes > n:
            raise ValueError(f"`axes` must not be larger than the number of dimensions of tensor {a}.  "
                             f"Received {axes}, vs tensor dimensions {n}.")
        return list(range(n - axes, n)), list(range(axes))
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        a_axes, b_axes = axes
        if isinstance(a_axes, (int, np.integer)) and isinstance(b_axes, (int, np.integer)):
            a_axes, b_axes = [a_axes], [b_axes]
        a_axes, b_axes = [int(i) for i in a_axes], [int(i) for i in b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(f"Different number of contraction axes `a` and `b`, {len(a_axes)} != {len(b_axes)}.")
        return a_axes, b_axes
    raise NotImplementedError("tensordot with a Tensor `axes` is not supported in flowlab; "
                              "pass an int or Python lists of axes")


def _reshape(a: Tensor, axes: list[int], flipped: bool) -> tuple[Tensor, Any]:
    rank = a.shape.ndims
    if rank is None:
        raise NotImplementedError(f"tensordot needs inputs of known rank, and {a.name} has none; "
                                  "give it one with set_shape or reshape")
    axes = [i + rank if i < 0 else i for i in axes]
    free = [i for i in range(rank) if i not in axes]
    perm = axes + free if flipped else free + axes
    moved = a if perm == list(range(rank)) else array_ops.transpose(a, perm)
    if a.shape.is_fully_defined():
        dims = a.shape.as_list()
        free_dims: Any = [dims[i] for i in free]
        prod_free, prod_axes = int(np.prod(free_dims)), int(np.prod([dims[i] for i in axes]))
        new_shape: Any = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
        if moved.shape.as_list() == new_shape:
            return moved, free_dims
        return array_ops.reshape(moved, new_shape), free_dims
    shape = array_ops.shape(a)
    free_dims = slicing.gather(shape, free)
    prod_free = math_ops.reduce_prod(free_dims)
    prod_axes = math_ops.reduce_prod(slicing.gather(shape, axes))
    new_shape = array_ops.stack([prod_axes, prod_free] if flipped else [prod_free, prod_axes])
    return array_ops.reshape(moved, new_shape), free_dims


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sum of products of `a` and `b` over `axes` (an int: the last n of `a` with the
    first n of `b`; or a pair of axis lists)."""
    g = graph_of([a, b])
    with g.as_default(), g.name_scope(name or "Tensordot") as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_axes, b_axes = _axes(a, axes)
        a_mat, a_free = _reshape(a, a_axes, flipped=False)
        b_mat, b_free = _reshape(b, b_axes, flipped=True)
        product = math_ops.matmul(a_mat, b_mat)
        if isinstance(a_free, list) and isinstance(b_free, list):
            if product.shape.is_fully_defined() and product.shape.as_list() == a_free + b_free:
                return product
            return array_ops.reshape(product, a_free + b_free, name=scope)
        a_free = a_free if isinstance(a_free, Tensor) else convert_to_tensor(a_free, dtype=dtypes.int32)
        b_free = b_free if isinstance(b_free, Tensor) else convert_to_tensor(b_free, dtype=dtypes.int32)
        return array_ops.reshape(product, array_ops.concat([a_free, b_free], 0), name=scope)


def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None, dtype: Any = dtypes.float32,
        name: str | None = None) -> Tensor:
    """An identity matrix [num_rows, num_columns], tiled over `batch_shape`."""
    g = graph_of([num_rows, num_columns])
    with g.as_default(), g.name_scope(name or "eye"):
        square = num_columns is None
        rows = math_ops.range(num_rows)
        cols = rows if square else math_ops.range(num_columns)
        ident = math_ops.cast(math_ops.equal(array_ops.expand_dims(rows, 1), array_ops.expand_dims(cols, 0)), dtype)
        if batch_shape is None:
            return identity(ident, name="diag" if square else "set_diag")
        batch = convert_to_tensor(batch_shape, dtype=dtypes.int32)
        full = array_ops.concat([batch, array_ops.shape(ident)], 0)
        return identity(array_ops.broadcast_to(ident, full), name="diag" if square else "set_diag")


def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """Coordinate grids from 1-D tensors (`indexing` "xy", the default, or "ij")."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        key = list(kwargs.keys())[0]
        raise TypeError(f"'{key}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got '{indexing}'")
    g = graph_of(list(args))
    with g.as_default(), g.name_scope(name or "meshgrid"):
        ndim = len(args)
        if not ndim:
            return []
        ones_shape = (1,) * ndim
        # (TensorFlow's stack(x) of one tensor or list is convert_to_tensor(x, name="stack"))
        flat = [x if isinstance(x, Tensor) else convert_to_tensor(x, name="stack") for x in args]
        out = [array_ops.reshape(x, list(ones_shape[:i] + (-1,) + ones_shape[i + 1:])) for i, x in enumerate(flat)]
        shapes = [array_ops.size(x) for x in flat]
        out_dtype = flat[0].dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            out[0] = array_ops.reshape(out[0], [1, -1] + [1] * (ndim - 2))
            out[1] = array_ops.reshape(out[1], [-1, 1] + [1] * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        mult = array_ops.ones(array_ops.stack(shapes), out_dtype)
        return [x * mult for x in out]
