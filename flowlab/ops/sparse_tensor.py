"""`tf.SparseTensor`: a sparse tensor as three dense tensors (TensorFlow's layout), and
`tf.sparse_placeholder`.

`indices` (int64, [N, rank]) holds the coordinates of the N stored values, `values`
([N]) the values, `dense_shape` (int64, [rank]) the shape of the dense tensor it
stands for.  Invariants: the three tensors are in one graph, and the static `shape`
is what `dense_shape`'s constant value says, merged with any `set_shape` (so a
sparse_placeholder's partially known shape survives, as in TensorFlow).

Session interplay (flowlab.runtime.client reads these hooks, nothing else): fetching a
SparseTensor gives a `SparseTensorValue` (`_fetch_parts`); a SparseTensor used as a
feed_dict key takes a `SparseTensorValue` or an `(indices, values, dense_shape)`
tuple, split over its three tensors (`_feed_parts`, `_split_feed_value`).

Operators, as TensorFlow's: `sp * dense`, `dense * sp`, `sp / dense` build
SparseDenseCwiseMul / SparseDenseCwiseDiv (the dense side broadcast to the sparse
one) and keep the sparse tensor's indices and dense_shape.

    >>> st = SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    >>> st.shape
    TensorShape([3, 4])
"""

from __future__ import annotations

import collections
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape, as_shape
from flowlab.ops.array_shapes import constant_value_as_shape
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.core_ops import placeholder, placeholder_with_default

__all__ = ["SparseTensor", "SparseTensorValue", "sparse_placeholder",
           "convert_to_tensor_or_sparse_tensor"]


class SparseTensorValue(collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])):
    """What fetching a SparseTensor gives: the three NumPy arrays."""

    __slots__ = ()


class SparseTensor:
    """A sparse tensor: `indices`, `values` and `dense_shape` tensors."""

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        with get_default_graph().name_scope("SparseTensor"):
            self._indices = convert_to_tensor(indices, dtype=dtypes.int64, name="indices")
            self._values = convert_to_tensor(values, name="values")
            self._dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64,
                                                  name="dense_shape")
        self._indices.shape.with_rank(2)
        self._values.shape.with_rank(1)
        self._dense_shape.shape.with_rank(1)
        self._indices.shape[0].assert_is_compatible_with(self._values.shape[0])
        self._indices.shape[1].assert_is_compatible_with(self._dense_shape.shape[0])
        self._shape = constant_value_as_shape(self._dense_shape)
        rank = self._dense_shape.shape[0].value
        if self._shape.ndims is None and rank is not None:
            self._shape = TensorShape([None] * rank)

    @classmethod
    def from_value(cls, value: Any) -> SparseTensor:
        if isinstance(value, SparseTensor):
            return value
        return cls(value.indices, value.values, value.dense_shape)

    def with_values(self, new_values: Any) -> SparseTensor:
        """The same indices and dense_shape with other values."""
        out = SparseTensor(self._indices, new_values, self._dense_shape)
        out._shape = self._shape
        return out

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def op(self) -> Any:
        return self._values.op

    @property
    def graph(self) -> Any:
        return self._values.graph

    @property
    def shape(self) -> TensorShape:
        """The static dense shape: `dense_shape`'s constant value, merged with set_shape."""
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        """Refine the static shape (TensorFlow raises ValueError on a conflict)."""
        shape = as_shape(shape)
        if shape.ndims is not None and self._shape.ndims is not None and shape.ndims != self._shape.ndims:
            raise ValueError(f"Shapes {self._shape} and {shape} must have the same rank")
        self._shape = self._shape.merge_with(shape)

    def consumers(self) -> list[Any]:
        seen: list[Any] = []
        for t in (self._indices, self._values, self._dense_shape):
            seen.extend(op for op in t.consumers() if op not in seen)
        return seen

    def eval(self, feed_dict: Any = None, session: Any = None) -> SparseTensorValue:
        from flowlab.graph.default_graph import _eval_hook  # the runtime's, as Tensor.eval

        return _eval_hook(self, feed_dict, session)  # type: ignore[no-any-return]

    # --- the session's hooks ---------------------------------------------------------
    def _fetch_parts(self) -> tuple[list[Tensor], Any]:
        return [self._indices, self._values, self._dense_shape], SparseTensorValue

    def _feed_parts(self) -> list[Tensor]:
        return [self._indices, self._values, self._dense_shape]

    def _split_feed_value(self, value: Any) -> list[Any]:
        if isinstance(value, SparseTensor):
            raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                            "values include Python scalars, strings, lists, numpy ndarrays, or "
                            "TensorHandles.")
        # Paired with the parts as TensorFlow's session zips them: a value that is no
        # 3-sequence fails later, on a part (shape, dtype or an unfed dense shape).
        return list(value)

    # --- operators (TensorFlow's sparse-dense cwise ops) -----------------------------
    def _cwise(self, op_name: str, op_type: str, y: Any) -> SparseTensor:
        # A late import: the cwise ops are declared over this class (sparse_math_ops).
        from flowlab.ops import sparse_math_ops

        return sparse_math_ops.sparse_dense_cwise(op_name, op_type, self, y)

    def __mul__(self, y: Any) -> SparseTensor:
        return self._cwise("mul", "SparseDenseCwiseMul", y)

    def __rmul__(self, x: Any) -> SparseTensor:
        return self._cwise("mul", "SparseDenseCwiseMul", x)

    def __truediv__(self, y: Any) -> SparseTensor:
        return self._cwise("truediv", "SparseDenseCwiseDiv", y)

    def __div__(self, y: Any) -> SparseTensor:
        return self._cwise("div", "SparseDenseCwiseDiv", y)

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")


def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """A SparseTensor to feed (`tf.sparse_placeholder`): `name/values`, `name/indices`
    placeholders and a `name/shape` dense shape -- a placeholder when `shape` is None,
    else a PlaceholderWithDefault of `shape` (-1 / None for an unknown dimension).

        >>> sp = sparse_placeholder(tf.float32, shape=[None, 3])
        >>> sess.run(sp, {sp: ([[0, 1]], [2.0], [4, 3])})
    """
    shape_name = f"{name}/shape" if name is not None else None
    if shape is None:
        rank = None
        dense_shape = placeholder(dtypes.int64, shape=[rank], name=shape_name)
        default = TensorShape(None)
    elif isinstance(shape, Tensor):
        rank = shape.shape[0].value
        default = constant_value_as_shape(shape)
        dense_shape = placeholder_with_default(shape, shape=shape.shape, name=shape_name)
    else:
        dims = [d.value if isinstance(d, Dimension) else d for d in shape]
        rank = len(dims)
        default = TensorShape([None if d is None or d == -1 else d for d in dims])
        t = convert_to_tensor([-1 if d is None else d for d in dims], dtype=dtypes.int64,
                              name=f"{name}/shape_default" if name is not None else None)
        dense_shape = placeholder_with_default(t, shape=t.shape, name=shape_name)
    result = SparseTensor(
        values=placeholder(dtype, shape=[None], name=f"{name}/values" if name is not None else None),
        indices=placeholder(dtypes.int64, shape=[None, rank],
                            name=f"{name}/indices" if name is not None else None),
        dense_shape=dense_shape)
    result.set_shape(default)
    return result


def convert_to_tensor_or_sparse_tensor(value: Any, dtype: Any = None,
                                       name: str | None = None) -> Any:
    """`value` as a SparseTensor when it is one (or a SparseTensorValue), else as a
    Tensor (`tf.convert_to_tensor_or_sparse_tensor`)."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype and not dtype.is_compatible_with(value.dtype):
            raise RuntimeError(f"Sparse dtype mismatch. Requested: {dtype.name}, "
                               f" Actual: {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
