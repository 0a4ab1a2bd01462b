"""The SparseToDense kernel (op: flowlab.ops.sparse_ops), with TensorFlow's checks in
TensorFlow's order and its messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import ALL, kernel
from flowlab.ops import sparse_ops  # noqa: F401  (declares SparseToDense)


def _fail(message: str) -> None:
    raise errors.InvalidArgumentError(None, None, message)


def _dims(shape: Any) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _first_invalid(ix: np.ndarray, shape: list[int]) -> str | None:
    """TensorFlow's SparseTensor::IndicesValid: the first row out of bounds, out of order
    (its first differing coordinate smaller than the previous row's) or repeated."""
    n = ix.shape[0]
    if n == 0:
        return None
    bad = ~np.all((ix >= 0) & (ix < np.asarray(shape, np.int64)), axis=1)
    if n > 1:
        differs = ix[1:] != ix[:-1]
        first = np.argmax(differs, axis=1)
        rows = np.arange(n - 1)
        smaller = ix[1:][rows, first] < ix[:-1][rows, first]
        bad[1:] |= ~differs.any(axis=1) | smaller
    hit = np.flatnonzero(bad)
    if not hit.size:
        return None
    r = int(hit[0])
    row = ix[r]
    where = f"indices[{r}] = {_dims(row)}"
    if not np.all((row >= 0) & (row < np.asarray(shape, np.int64))):
        return f"{where} is out of bounds: need 0 <= index < {_dims(shape)}"
    if np.array_equal(row, ix[r - 1]):
        return f"{where} is repeated"
    return (f"{where} is out of order. Many sparse ops require sorted indices.\n"
            "    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n")


@kernel("SparseToDense", devices=ALL, host_memory=("sparse_indices", "output_shape"))
def sparse_to_dense(ctx: Any, indices: Any, output_shape: Any, values: Any, default: Any) -> Any:
    xp = ctx.xp
    if indices.ndim > 2:
        _fail(f"sparse_indices should be a scalar, vector, or matrix, got shape {_dims(indices.shape)}")
    if output_shape.ndim != 1:
        _fail(f"output_shape must be rank 1, got shape {_dims(output_shape.shape)}")
    num_elems = indices.shape[0] if indices.ndim > 0 else 1
    num_dims = indices.shape[1] if indices.ndim > 1 else 1
    if output_shape.size != num_dims:
        _fail(f"output_shape has incorrect number of elements: {output_shape.size} should be: "
              f"{num_dims}")
    if not (values.ndim == 0 or (values.ndim == 1 and values.size == num_elems)):
        _fail(f"sparse_values has incorrect shape {_dims(values.shape)}, should be [] or "
              f"[{num_elems}]")
    if np.ndim(default) != 0:
        _fail("default_value should be a scalar.")
    shape = [int(d) for d in output_shape.tolist()]
    ix = np.asarray(indices).reshape(num_elems, num_dims).astype(np.int64)
    if ctx.attrs["validate_indices"]:
        problem = _first_invalid(ix, shape)
        if problem:
            _fail(problem)
    elif ix.size and not np.all((ix >= 0) & (ix < np.asarray(shape, np.int64))):
        _fail(f"Indices are not valid (out of bounds).  Shape: {_dims(shape)}")
    out = xp.full(shape, default, dtype=values.dtype)
    if num_elems:
        coords = tuple(xp.asarray(ix[:, d]) for d in range(num_dims))
        # Assignment in index order: with a repeated index the last value stays, as TF.
        out[coords] = xp.broadcast_to(values, (num_elems,))
    return out
