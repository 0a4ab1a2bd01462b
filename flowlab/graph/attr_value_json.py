"""GraphDef attr values as JSON: one dtype, shape, tensor, scalar or list each way.

`attr_to_json(value, kind)` writes an attr value as the one-key object of
docs/graphdef.md (`{"type": "DT_FLOAT"}`, `{"i": 3}`, `{"tensor": {...}}`,
`{"list": {"i": [1, 2]}}`, ...); `attr_from_json(obj, where)` reads one back as
(kind, value), validating every field and raising ValueError that names `where`.
Floats that JSON cannot hold are written "NaN"/"Infinity"/"-Infinity"; tensor data
is base64 of little-endian C-order bytes.  Nothing is evaluated or unpickled.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor_shape import TensorShape

__all__ = ["attr_to_json", "attr_from_json", "dtype_to_json", "dtype_from_json"]


# --- dtypes ----------------------------------------------------------------------------
_DT_NAME = {
    dtypes.float32: "DT_FLOAT", dtypes.float64: "DT_DOUBLE", dtypes.float16: "DT_HALF",
    dtypes.int8: "DT_INT8", dtypes.int16: "DT_INT16", dtypes.int32: "DT_INT32",
    dtypes.int64: "DT_INT64", dtypes.uint8: "DT_UINT8", dtypes.uint16: "DT_UINT16",
    dtypes.uint32: "DT_UINT32", dtypes.uint64: "DT_UINT64", dtypes.bool: "DT_BOOL",
    dtypes.complex64: "DT_COMPLEX64", dtypes.complex128: "DT_COMPLEX128",
    dtypes.string: "DT_STRING", dtypes.resource: "DT_RESOURCE", dtypes.variant: "DT_VARIANT",
}
_DT_BY_NAME = {v: k for k, v in _DT_NAME.items()}
_DT_BY_NAME.update({v + "_REF": k._as_ref() for k, v in _DT_NAME.items()})


def dtype_to_json(dt: Any) -> str:
    """`float32` -> "DT_FLOAT" (references get a "_REF" suffix, as in TensorFlow)."""
    d = dtypes.as_dtype(dt)
    name = _DT_NAME[d.base_dtype]
    return name + "_REF" if d.is_ref_dtype else name


def dtype_from_json(name: Any, where: str) -> dtypes.DType:
    if not isinstance(name, str) or name not in _DT_BY_NAME:
        raise ValueError(f"{where}: unknown dtype {name!r} (expected e.g. \"DT_FLOAT\")")
    return _DT_BY_NAME[name]


# --- shapes ----------------------------------------------------------------------------
def _shape_to_json(s: Any) -> dict[str, Any]:
    dims = s.as_tuple() if isinstance(s, TensorShape) else (None if s is None else TensorShape(s).as_tuple())
    if dims is None:
        return {"unknown_rank": True}
    return {"dim": [-1 if d is None else int(d) for d in dims]}


def _shape_from_json(obj: Any, where: str) -> tuple[int | None, ...] | None:
    if not isinstance(obj, dict) or not set(obj) <= {"dim", "unknown_rank"}:
        raise ValueError(f"{where}: a shape is {{\"dim\": [...]}} or {{\"unknown_rank\": true}}, got {_short(obj)}")
    unknown = obj.get("unknown_rank", False)
    if not isinstance(unknown, bool):
        raise ValueError(f"{where}: 'unknown_rank' must be true or false, got {_short(unknown)}")
    if unknown:
        if obj.get("dim"):
            raise ValueError(f"{where}: a shape of unknown rank cannot list dims")
        return None
    dims = obj.get("dim", [])
    if not isinstance(dims, list) or not all(_is_int(d) and -1 <= d < 2**63 for d in dims):
        raise ValueError(f"{where}: 'dim' must be a list of sizes >= -1 (-1: unknown), got {_short(dims)}")
    return tuple(None if d == -1 else d for d in dims)


# --- tensors ---------------------------------------------------------------------------
def _le(np_type: Any) -> np.dtype:
    return np.dtype(np_type).newbyteorder("<")


def _tensor_to_json(value: Any) -> dict[str, Any]:
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in ("U", "S"):
        flat = [v.encode() if isinstance(v, str) else bytes(v) for v in arr.reshape(-1)]
        data: Any = [base64.b64encode(v).decode("ascii") for v in flat]
        dt = dtypes.string
    else:
        dt = dtypes.as_dtype(arr.dtype.newbyteorder("="))
        raw = np.ascontiguousarray(arr, dtype=_le(arr.dtype)).tobytes()
        data = base64.b64encode(raw).decode("ascii")
    return {"dtype": dtype_to_json(dt), "shape": [int(d) for d in arr.shape], "data": data}


def _b64(s: Any, where: str) -> bytes:
    if not isinstance(s, str):
        raise ValueError(f"{where}: expected a base64 string, got {_short(s)}")
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError(f"{where}: invalid base64 data") from None


def _tensor_from_json(obj: Any, where: str) -> np.ndarray:
    if not isinstance(obj, dict) or set(obj) != {"dtype", "shape", "data"}:
        raise ValueError(
            f"{where}: a tensor is {{\"dtype\", \"shape\", \"data\"}}, got {_short(obj)}"
        )
    dt = dtype_from_json(obj["dtype"], where)
    if dt.is_ref_dtype or dt in (dtypes.resource, dtypes.variant):
        raise ValueError(f"{where}: tensors of dtype {obj['dtype']} cannot be stored in a GraphDef")
    shape = obj["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and 0 <= d < 2**31 for d in shape):
        raise ValueError(f"{where}: tensor 'shape' must be a list of sizes >= 0, got {_short(shape)}")
    n = math.prod(shape)
    data = obj["data"]
    if dt is dtypes.string:
        if not isinstance(data, list) or len(data) != n:
            raise ValueError(
                f"{where}: a DT_STRING tensor of shape {shape} needs a list of {n} base64 "
                f"strings as 'data', got {_short(data)}"
            )
        out = np.empty(n, dtype=object)
        out[:] = [_b64(s, where) for s in data]
        arr = out.reshape(shape)
    else:
        raw = _b64(data, where)
        le = _le(dt.as_numpy_dtype)
        if len(raw) != n * le.itemsize:
            raise ValueError(
                f"{where}: tensor data has {len(raw)} bytes, but {obj['dtype']} of shape {shape} "
                f"needs {n * le.itemsize}"
            )
        if dt is dtypes.bool and raw.strip(b"\x00\x01"):
            raise ValueError(f"{where}: DT_BOOL tensor data must be bytes 0 or 1")
        arr = np.frombuffer(raw, dtype=le).astype(dt.as_numpy_dtype).reshape(shape)
    arr.flags.writeable = False
    return arr


# --- attr values -----------------------------------------------------------------------
_SCALAR_KEY = {
    "type": "type", "int": "i", "float": "f", "bool": "b", "string": "s",
    "shape": "shape", "tensor": "tensor", "func": "func",
}
_KIND_OF_KEY = {v: k for k, v in _SCALAR_KEY.items()}
_LIST_KEYS = ("type", "i", "f", "b", "s", "shape", "tensor")


def _float_to_json(v: Any) -> Any:
    f = float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _scalar_to_json(key: str, v: Any) -> Any:
    if key == "type":
        return dtype_to_json(v)
    if key == "i":
        if isinstance(v, (float, np.floating)) and v != int(v):
            raise ValueError(f"{v!r} is not an integer")
        return int(v)
    if key == "f":
        return _float_to_json(v)
    if key == "b":
        return bool(v)
    if key == "s":
        return v.decode("utf-8") if isinstance(v, (bytes, np.bytes_)) else str(v)
    if key == "shape":
        return _shape_to_json(v)
    if key == "tensor":
        return _tensor_to_json(v)
    if key == "func":
        name = v if isinstance(v, str) else getattr(v, "name", None)
        if not isinstance(name, str):
            raise ValueError(f"{v!r} is not a function name")
        return {"name": name}
    raise AssertionError(key)


def _infer_key(v: Any) -> str:
    if isinstance(v, dtypes.DType):
        return "type"
    if isinstance(v, (bool, np.bool_)):
        return "b"
    if isinstance(v, (int, np.integer)):
        return "i"
    if isinstance(v, (float, np.floating)):
        return "f"
    if isinstance(v, (str, bytes)):
        return "s"
    if isinstance(v, TensorShape):
        return "shape"
    if isinstance(v, np.ndarray):
        return "tensor"
    raise ValueError(f"a value of type {type(v).__name__} has no GraphDef attr encoding")


def attr_to_json(value: Any, kind: str | None = None) -> dict[str, Any]:
    """Encode one attr value; `kind` is the OpDef's attr kind, or None to infer it."""
    if kind is not None and kind.startswith("list("):
        key = _SCALAR_KEY[kind[5:-1]]
        return {"list": {key: [_scalar_to_json(key, v) for v in value]}}
    if kind is not None:
        return {_SCALAR_KEY[kind]: _scalar_to_json(_SCALAR_KEY[kind], value)}
    if isinstance(value, tuple) and all(d is None or _is_int(d) for d in value):
        # flowlab keeps shape attrs as tuples (and lists for list attrs), and decoding
        # gives the same, so kind-less attrs round-trip.
        return {"shape": _shape_to_json(value)}
    if isinstance(value, (list, tuple)):
        if not value:
            return {"list": {}}
        keys = {_infer_key(v) for v in value}
        if keys == {"i", "f"}:
            keys = {"f"}
        if len(keys) != 1:
            raise ValueError(f"a list mixing {sorted(keys)} has no GraphDef attr encoding")
        key = keys.pop()
        return {"list": {key: [_scalar_to_json(key, v) for v in value]}}
    key = _infer_key(value)
    return {key: _scalar_to_json(key, value)}


def _scalar_from_json(key: str, v: Any, where: str) -> Any:
    if key == "type":
        d = dtype_from_json(v, where)
        if d.is_ref_dtype:
            raise ValueError(f"{where}: a type attr cannot be a reference type ({v})")
        return d
    if key == "i":
        if not _is_int(v) or not -(2**63) <= v < 2**63:
            raise ValueError(f"{where}: expected a 64-bit integer, got {_short(v)}")
        return v
    if key == "f":
        if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
            return float(v.replace("Infinity", "inf"))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(
                f"{where}: expected a number or \"NaN\"/\"Infinity\"/\"-Infinity\", got {_short(v)}"
            )
        return float(v)
    if key == "b":
        if not isinstance(v, bool):
            raise ValueError(f"{where}: expected true or false, got {_short(v)}")
        return v
    if key == "s":
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected a string, got {_short(v)}")
        return v
    if key == "shape":
        return _shape_from_json(v, where)
    if key == "tensor":
        return _tensor_from_json(v, where)
    if key == "func":
        if not isinstance(v, dict) or set(v) != {"name"} or not isinstance(v["name"], str):
            raise ValueError(f"{where}: a func is {{\"name\": \"...\"}}, got {_short(v)}")
        return v["name"]
    raise AssertionError(key)


def attr_from_json(obj: Any, where: str) -> tuple[str, Any]:
    """Decode one attr value: (kind, value).  The kind of an empty list is "list"."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise ValueError(
            f"{where}: an attr value is an object with one key (type, i, f, b, s, shape, tensor, "
            f"func or list), got {_short(obj)}"
        )
    ((key, v),) = obj.items()
    if key == "list":
        if not isinstance(v, dict) or len(v) > 1 or not set(v) <= set(_LIST_KEYS):
            raise ValueError(
                f"{where}: a list attr is {{\"list\": {{<kind>: [...]}}}} with one of "
                f"{', '.join(_LIST_KEYS)}, got {_short(v)}"
            )
        if not v:
            return "list", []
        ((k, items),) = v.items()
        if not isinstance(items, list):
            raise ValueError(f"{where}: list '{k}' must be a JSON array, got {_short(items)}")
        return f"list({_KIND_OF_KEY[k]})", [_scalar_from_json(k, x, f"{where}[{i}]") for i, x in enumerate(items)]
    if key not in _KIND_OF_KEY:
        raise ValueError(f"{where}: unknown attr value kind {key!r}")
    return _KIND_OF_KEY[key], _scalar_from_json(key, v, where)


# --- helpers ---------------------------------------------------------------------------
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."
