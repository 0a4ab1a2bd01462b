"""Python values that hold Tensors or static shapes, converted to tensors.

TensorFlow converts `[tf.shape(x)[0], -1]` to a Pack ("autopacking") and
`x.shape[0]`, `x.shape` or `[x.shape[0], 3]` to int constants.  Both are conversion
functions registered with the builder's table (`register_tensor_conversion_function`),
so every op accepts such values, not only the array ops.  `to_tensor` and `index` are
the array builders' converters (shape-like arguments default to int32).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.provisional_names import mark, provisional
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor, register_tensor_conversion_function
from flowlab.ops.constant_op import constant
from flowlab.ops.variables import Variable


# --- autopacking: [t, 3] -> Pack -----------------------------------------------------
def _is_tensor(value: Any) -> bool:
    # TensorFlow's test is `isinstance(elem, core.Tensor)`, which a Variable passes: it
    # stays an element, converted (`v/read`) by the Pack.
    return isinstance(value, (Tensor, Variable))


def _has_tensor(value: Any) -> bool:
    if _is_tensor(value):
        return True
    if isinstance(value, (list, builtins.tuple)):
        return any(_has_tensor(v) for v in value)
    return False


class _ListWithTensorsMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, (list, builtins.tuple)) and _has_tensor(value)


class _ListWithTensors(metaclass=_ListWithTensorsMeta):
    """Matches lists/tuples that hold at least one Tensor (for the conversion table)."""


def _first_dtype(value: Any) -> dtypes.DType | None:
    if _is_tensor(value):
        return value.dtype.base_dtype
    if isinstance(value, (list, builtins.tuple)):
        for v in value:
            d = _first_dtype(v)
            if d is not None:
                return d
    return None


def _autopack(value: Any, dtype: Any = None, name: str | None = None, as_ref: bool = False) -> Tensor:
    dt = dtypes.as_dtype(dtype).base_dtype if dtype is not None else _first_dtype(value)
    graph = get_default_graph()
    with graph.name_scope(name or "packed") as scope:
        elems = []
        for i, v in enumerate(value):
            if _is_tensor(v):
                if v.dtype.base_dtype is not dt:
                    raise TypeError(
                        f"Cannot convert a list containing a tensor of dtype "
                        f"{v.dtype.base_dtype.name} to {dt.name} (Tensor is: {v!r})"
                    )
                elems.append(v)
            elif isinstance(v, (list, builtins.tuple)) and _has_tensor(v):
                elems.append(_autopack(v, dt, str(i)))
            else:
                if isinstance(v, (list, builtins.tuple)):
                    # TensorFlow opens the nested list's scope before it finds no tensor
                    # there: the name is taken, and the Const below is `1_1`.
                    with graph.name_scope(str(i)):
                        pass
                elems.append(constant(_plain(v), dtype=dt, name=str(i)))
        return apply_op("Pack", values=elems, axis=0, name=scope)


register_tensor_conversion_function(_ListWithTensors, _autopack, priority=99)


# --- static shapes as values: Dimension, TensorShape, [Dimension(2), -1] ---------------------
def _plain(value: Any) -> Any:
    """`value` with Dimensions and TensorShapes replaced by ints (ValueError if unknown)."""
    if isinstance(value, Dimension):
        if value.value is None:
            raise ValueError("Cannot convert an unknown Dimension to a Tensor: ?")
        return value.value
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
        return value.as_list()
    if isinstance(value, (list, builtins.tuple)):
        return [_plain(v) for v in value]
    return value


def _has_dimension(value: Any) -> bool:
    if isinstance(value, (Dimension, TensorShape)):
        return True
    if isinstance(value, (list, builtins.tuple)):
        return any(_has_dimension(v) for v in value)
    return False


class _ListWithDimensionsMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, (list, builtins.tuple)) and _has_dimension(value)


class _ListWithDimensions(metaclass=_ListWithDimensionsMeta):
    """Matches lists/tuples that hold Dimensions or TensorShapes (and no Tensor)."""


def _shape_value_to_tensor(value: Any, dtype: Any = None, name: str | None = None,
                           as_ref: bool = False) -> Tensor:
    try:
        v = _plain(value)
    except ValueError:
        if not isinstance(value, (list, builtins.tuple)):
            raise
        raise TypeError(f"Failed to convert elements of {value!r} to Tensor. Consider casting "
                        "elements to a supported type.") from None
    if dtype is None and np.any(np.asarray(v, dtype=np.int64) >= 2**31):
        dtype = dtypes.int64
    return constant(v, dtype=dtype, name=name or "Const")


for _base in (Dimension, TensorShape, _ListWithDimensions):
    register_tensor_conversion_function(_base, _shape_value_to_tensor, priority=100)


def _to_tensor(value: Any, name: str, dtype: Any = None, hint: Any = None) -> Tensor:
    """`value` as a Tensor named `name`; a value made here is provisional: the op that
    reads it first renames it into its own scope (`Reshape/shape`, as TensorFlow)."""
    if isinstance(value, Tensor):
        return value
    g = get_default_graph()
    with provisional(g) as box:
        if isinstance(value, (list, builtins.tuple)) and _has_tensor(value):
            t = _autopack(value, dtype, name)
        else:
            t = convert_to_tensor(value, dtype=dtype, name=name, preferred_dtype=hint)
    return mark(g, box, t)


def _index(value: Any, name: str, like: Tensor | None = None) -> Tensor:
    """Shape-like arguments: Python values become int32 (the ops' default index type),
    or the dtype of `like`, the argument sharing their type attr."""
    hint = like.dtype.base_dtype if like is not None else dtypes.int32
    return _to_tensor(value, name, hint=hint)
