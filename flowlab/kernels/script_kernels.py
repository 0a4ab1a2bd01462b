"""Kernels of `PyFunc` and `PyFuncStateless` (flowlab.ops.script_ops).

The kernel looks its function up by token, calls it on the executor thread that runs
the op (holding the GIL only while Python runs; NumPy releases it inside its own
loops) and checks what comes back as TensorFlow's `py_func.cc` does:

- arguments: NumPy scalars for 0-d numeric inputs, `bytes` for 0-d strings, writable
  copies for arrays (the function may modify them without touching the graph's
  values);
- results: a list or tuple is one value per output, `None` is no value, anything
  else is one value; each is converted with `np.asarray` (text to UTF-8 `bytes`) and
  must have the output's dtype exactly ("0-th value returned by pyfunc_3 is double,
  but expects float"); objects that are not strings are an InternalError;
- exceptions: mapped to TensorFlow's error classes, the message carrying the Python
  traceback.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.kernels.registry import CPU, kernel
from flowlab.ops.script_ops import REGISTRY

# TensorFlow's DataTypeString names, which its messages use.
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _tf_name(dt: dtypes.DType) -> str:
    return _TF_NAMES.get(dt.name, dt.name)


def _argument(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        return np.array(value, copy=True)
    return value  # already a NumPy scalar or bytes


def _error_for(exc: BaseException) -> type[errors.OpError]:
    if isinstance(exc, (ValueError, TypeError)):
        return errors.InvalidArgumentError
    if isinstance(exc, StopIteration):
        return errors.OutOfRangeError
    if isinstance(exc, MemoryError):
        return errors.ResourceExhaustedError
    if isinstance(exc, NotImplementedError):
        return errors.UnimplementedError
    return errors.UnknownError


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _python_error(exc: BaseException) -> errors.OpError:
    # TensorFlow's text: "ValueError: boom\n" + the traceback's parts joined by blank
    # lines.
    tb = "\n".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return _error_for(exc)(None, None, f"{_type_name(exc)}: {exc}\n{tb}\n")


def _to_array(value: Any) -> np.ndarray:
    arr = np.asarray(value, order="C")
    if arr.dtype.kind == "S" and arr is not value:
        return np.asarray(value, dtype=object, order="C")
    if arr.dtype.kind == "U":
        return np.vectorize(lambda s: s.encode("utf8"), otypes=[object])(arr) if arr.size else arr.astype(object)
    return arr


def _result_dtype(arr: np.ndarray) -> dtypes.DType:
    if arr.dtype.kind in "OS":
        for x in arr.reshape(-1):
            if not isinstance(x, (bytes, str)):
                raise errors.InternalError(None, None, f"Unsupported object type {type(x).__name__}")
        return dtypes.string
    return dtypes.as_dtype(arr.dtype)


def _output(arr: np.ndarray, expected: dtypes.DType, i: int, token: str) -> Any:
    got = _result_dtype(arr)
    if got is not expected:
        raise errors.InvalidArgumentError(
            None, None, f"{i}-th value returned by {token} is {_tf_name(got)}, but expects {_tf_name(expected)}")
    if got is dtypes.string:
        out = np.empty(arr.shape, dtype=object)
        for idx, x in np.ndenumerate(arr):
            out[idx] = x.encode("utf8") if isinstance(x, str) else bytes(x)
        return out[()] if out.ndim == 0 else out
    return arr


def _call(ctx: Any, *inputs: Any) -> Any:
    token = ctx.attrs["token"]
    tout = list(ctx.attrs["Tout"])
    func = REGISTRY.get(token)
    if func is None:
        raise errors.InvalidArgumentError(
            None, None, f"ValueError: Could not find callback with key={token} in the registry.")
    try:
        ret = func(*[_argument(x) for x in inputs])
    except Exception as e:  # noqa: BLE001 - every Python error becomes the step's error
        raise _python_error(e) from e
    if ret is None:
        values: list[Any] = []
    elif isinstance(ret, (list, tuple)):
        values = list(ret)
    else:
        values = [ret]
    if len(values) != len(tout):
        raise errors.InvalidArgumentError(
            None, None, f"{token} returns {len(values)} values, but expects to see {len(tout)} values.")
    outs = [_output(_to_array(v), dt, i, token) for i, (v, dt) in enumerate(zip(values, tout))]
    return outs


@kernel("PyFunc", devices=CPU, expensive=True)
def py_func(ctx: Any, *inputs: Any) -> Any:
    return _call(ctx, *inputs)


@kernel("PyFuncStateless", devices=CPU, expensive=True)
def py_func_stateless(ctx: Any, *inputs: Any) -> Any:
    return _call(ctx, *inputs)
