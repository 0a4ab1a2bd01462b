"""`tf.SparseTensor`: a sparse tensor as three dense tensors (TensorFlow's layout).

`indices` (int64, [N, rank]) holds the coordinates of the N stored values, `values`
([N]) the values, `dense_shape` (int64, [rank]) the shape of the dense tensor it
stands for.  Fetching one from a session gives a `SparseTensorValue` (a namedtuple
of the three arrays), through `_fetch_parts` (flowlab.runtime.client.fetches).

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
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.const_fold import constant_value

__all__ = ["SparseTensor", "SparseTensorValue"]

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])


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

    @classmethod
    def from_value(cls, value: Any) -> SparseTensor:
        if isinstance(value, SparseTensor):
            return value
        return cls(value.indices, value.values, value.dense_shape)

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
        """The static dense shape: known where `dense_shape` is a constant."""
        v = constant_value(self._dense_shape)
        if v is not None:
            return TensorShape([int(d) for d in v])
        n = self._dense_shape.shape[0].value if self._dense_shape.shape.ndims else None
        return TensorShape(None if n is None else [None] * n)

    def get_shape(self) -> TensorShape:
        return self.shape

    def eval(self, feed_dict: Any = None, session: Any = None) -> SparseTensorValue:
        from flowlab.graph.default_graph import _eval_hook  # the runtime's, as Tensor.eval

        return _eval_hook(self, feed_dict, session)  # type: ignore[no-any-return]

    def _fetch_parts(self) -> tuple[list[Tensor], Any]:
        return [self._indices, self._values, self._dense_shape], SparseTensorValue

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")
