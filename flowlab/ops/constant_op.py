"""Const: a tensor whose value is stored in the graph (an attr), as `tf.constant`."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.op_def import op_def

CONST = op_def(
    "Const",
    outputs=["output: dtype"],
    attrs=["value: tensor", "dtype: type"],
    shape_fn=lambda op: [TensorShape(op.get_attr("value").shape)],
)


def to_numpy(value: Any, dtype: dtypes.DType | None = None, what: str = "value") -> np.ndarray:
    """Convert a Python/NumPy value to an array of `dtype` (TensorFlow's inference when
    None), with TensorFlow's errors for values that do not fit the dtype."""
    if isinstance(value, Tensor):
        raise TypeError(f"Expected a Python or NumPy value for {what}, got Tensor {value.name}.")
    if dtype is None:
        dtype = dtypes.dtype_of_value(value)
    dtype = dtype.base_dtype
    if dtype is dtypes.string:
        arr = np.asarray(value, dtype=object)
        flat = [v.encode() if isinstance(v, str) else v for v in arr.reshape(-1)]
        for v in flat:
            if not isinstance(v, (bytes, np.bytes_)):
                raise TypeError(f"Expected string, got {v!r} of type '{type(v).__name__}' instead.")
        out = np.empty(len(flat), dtype=object)
        out[:] = [bytes(v) for v in flat]
        return out.reshape(arr.shape)
    if dtype in (dtypes.resource, dtypes.variant):
        raise TypeError(f"Cannot make a constant of dtype {dtype.name}.")
    np_t = dtype.as_numpy_dtype
    if isinstance(value, (np.ndarray, np.generic)):
        # NumPy values are cast as NumPy casts them (TensorFlow does the same).
        with np.errstate(all="ignore"):
            return np.asarray(value).astype(np_t)
    # Python values are checked element by element: no float -> int, no int -> bool.
    src = np.asarray(value)
    if src.dtype.kind in ("U", "S") or (src.dtype == object and src.size):
        bad = next((v for v in _flat(value) if not isinstance(v, _ACCEPTS[_kind(dtype)])), None)
        raise TypeError(f"Expected {dtype.name}, but got {_short(bad)} of type '{type(bad).__name__}'.")
    accepted = _ACCEPTS[_kind(dtype)]
    for v in _flat(value):
        if not isinstance(v, accepted):
            raise TypeError(f"Expected {dtype.name}, but got {_short(v)} of type '{type(v).__name__}'.")
    with np.errstate(all="ignore"):
        if dtype.is_integer and src.dtype.kind in ("i", "u"):
            # Out-of-range Python ints wrap around, as TensorFlow's conversion does.
            return np.array(value, dtype=object).astype(np.int64).astype(np_t) if src.dtype == object else src.astype(np_t)
        return src.astype(np_t)


_ACCEPTS = {
    "bool": (bool, np.bool_),
    "int": (bool, int, np.bool_, np.integer),
    "float": (bool, int, float, np.bool_, np.integer, np.floating),
    "complex": (bool, int, float, complex, np.bool_, np.number),
}


def _kind(dtype: dtypes.DType) -> str:
    if dtype.is_bool:
        return "bool"
    if dtype.is_integer:
        return "int"
    if dtype.is_complex:
        return "complex"
    return "float"


def _flat(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _short(value: Any) -> str:
    s = repr(value)
    return s if len(s) < 60 else s[:57] + "..."


def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str | None = "Const",
    verify_shape: bool = False,
) -> Tensor:
    """A constant tensor (`tf.constant`), with TensorFlow 1.x's shape semantics: a
    scalar fills `shape`; too few values repeat the last one; too many is an error."""
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    arr = to_numpy(value, dt)
    name = "Const" if name is None else name  # TensorFlow names it Const too
    if shape is not None:
        shape = tuple(int(d) for d in (TensorShape(shape).as_list()))
        n = int(np.prod(shape, dtype=np.int64))
        if verify_shape and arr.shape != shape:
            raise TypeError(f"Expected Tensor's shape: {shape}, got {arr.shape}.")
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == n:
            arr = arr.reshape(shape)
        elif arr.size < n:
            if arr.size == 0:
                raise ValueError(f"Cannot fill a tensor of shape {shape} from an empty value.")
            flat = arr.reshape(-1)
            arr = np.concatenate([flat, np.repeat(flat[-1:], n - arr.size)]).reshape(shape)
        else:
            raise ValueError(
                f"Too many elements provided. Takes at most {n}, but got {arr.size}."
            )
    return make_const(arr, name)


def make_const(arr: np.ndarray, name: str = "Const") -> Tensor:
    g = get_default_graph()
    if arr.dtype != object and arr.flags.writeable:
        arr = arr.copy()
        arr.flags.writeable = False
    dt = dtypes.as_dtype(arr.dtype) if arr.dtype != object else dtypes.string
    # A name ending in "/" is a scope's own name and names the op exactly ("zeros").
    unique = name[:-1] if name.endswith("/") else g.unique_name(name)
    op = g._create_op("Const", [], [dt], {"value": arr, "dtype": dt}, unique, CONST, CONST.shape_fn)
    return op.outputs[0]
