"""Python-side tensor utilities of `tf.*`: `is_tensor`, `get_static_value` (a tensor's
value when it is known while building the graph), `make_tensor_proto` /
`make_ndarray` (NumPy values <-> TensorFlow's TensorProto message, through the
TensorFlow port in tensorboard.util.tensor_util, so the bytes are TensorFlow's) and
`dimension_at_index`.  Nothing here adds ops to a graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape
from flowlab.ops.const_fold import constant_value

__all__ = ["is_tensor", "is_symbolic_tensor", "get_static_value", "make_tensor_proto", "make_ndarray", "dimension_at_index"]


def is_symbolic_tensor(tensor: Any) -> bool:
    """Whether `tensor` is a graph tensor proper (`tf.is_symbolic_tensor`): a Tensor, not
    a variable, sparse tensor or value."""
    from flowlab.graph.tensor import Tensor

    return isinstance(tensor, Tensor)


def is_tensor(x: Any) -> bool:
    """Whether `x` is a graph tensor (a Tensor, SparseTensor, IndexedSlices or Variable)."""
    from flowlab.ops.indexed_slices import IndexedSlices
    from flowlab.ops.sparse_tensor import SparseTensor
    from flowlab.ops.variables import Variable

    return isinstance(x, (Tensor, SparseTensor, IndexedSlices, Variable))


def get_static_value(tensor: Any, partial: bool = False) -> Any:
    """The NumPy value of `tensor` if the graph determines it (constants and what folds
    from them), else None; a non-tensor is returned as it is.

    >>> tf.get_static_value(tf.shape(tf.zeros([2, 3])))   # array([2, 3], dtype=int32)
    """
    if not isinstance(tensor, Tensor):
        return tensor
    value = constant_value(tensor)
    return None if value is None else np.asarray(value)


def make_tensor_proto(values: Any, dtype: Any = None, shape: Any = None, verify_shape: bool = False,
                      allow_broadcast: bool = False) -> Any:
    """A TensorProto holding `values` (of `dtype`, reshaped or filled to `shape`), as
    TensorFlow's `tf.make_tensor_proto` encodes it."""
    from tensorboard.util import tensor_util

    np_dtype = dtypes.as_dtype(dtype).as_numpy_dtype if dtype is not None else None
    if allow_broadcast and shape is not None:
        values = np.broadcast_to(np.asarray(values, dtype=np_dtype), tuple(shape))
    return tensor_util.make_tensor_proto(values, dtype=np_dtype, shape=shape, verify_shape=verify_shape)


def make_ndarray(tensor: Any) -> np.ndarray:
    """The NumPy array a TensorProto holds."""
    from tensorboard.util import tensor_util

    return tensor_util.make_ndarray(tensor)


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """shape.dims[index] (an unknown Dimension when the rank is unknown)."""
    shape = TensorShape(shape)
    if shape.ndims is None:
        return Dimension(None)
    return shape.dims[index]
