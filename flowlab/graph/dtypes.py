"""Element types of tensors.

A `DType` wraps a NumPy dtype (or one of the two non-NumPy kinds: `string`, whose
values are Python bytes held in object arrays, and `resource`, a handle to state on
a device).  Every DType also has a *reference* twin (`float32_ref`), the type of a
TensorFlow 1.x variable's output: consumers that take a plain value dereference it.

DTypes are interned: `as_dtype("float32") is float32` and `DType(1) is float32` (the
constructor takes TensorFlow's `DataType` enum value), so comparisons are identity.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

__all__ = [
    "DType",
    "as_dtype",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "string",
    "resource",
    "variant",
    "half",
    "double",
]


class DType:
    """An element type; compare with `==` or `is` (instances are interned)."""

    __slots__ = ("name", "_np", "_is_ref", "_base", "_ref", "_enum", "__weakref__")
    name: str
    _np: Any
    _is_ref: builtins.bool
    _base: DType
    _ref: DType | None
    _enum: int

    def __new__(cls, type_enum: Any, handle_data: Any = None) -> DType:
        """`tf.DType(type_enum)`: the interned DType of TensorFlow's `DataType` enum value
        (`tf.DType(23) is tf.uint64`); the value goes through `int()` first, as there."""
        if handle_data is not None:
            raise TypeError("handle_data must be of the type HandleData")
        n = int(type_enum)
        d = _BY_ENUM.get(n)
        if d is not None:
            return d
        from tensorboard.compat.proto import types_pb2

        if n and n in types_pb2.DataType.values():
            raise TypeError(f"{n} is TensorFlow's {types_pb2.DataType.Name(n)}, a DataType flowlab "
                            f"does not have; it has {', '.join(d.name for d in _ALL)}")
        raise TypeError(f"{n} does not correspond to a valid tensorflow::DataType")

    @classmethod
    def _intern(cls, name: str, np_dtype: Any, is_ref: builtins.bool, enum: int) -> DType:
        """A new DType object: only `_make` calls this, once per type at import."""
        self = object.__new__(cls)
        self.name = name
        self._np = np_dtype
        self._is_ref = is_ref
        self._base = self
        self._ref = None
        self._enum = enum
        return self

    # --- TensorFlow 1.x properties -------------------------------------------------
    @property
    def as_numpy_dtype(self) -> Any:
        """The NumPy scalar type (`np.float32`); `object` for string, None for resource."""
        return self._np

    @property
    def base_dtype(self) -> DType:
        return self._base

    @property
    def as_datatype_enum(self) -> int:
        """TensorFlow's `DataType` enum value (`DT_FLOAT` = 1, refs add 100)."""
        return self._enum

    @property
    def real_dtype(self) -> DType:
        """float32/float64 for complex64/complex128; the dtype itself otherwise."""
        b = self._base
        if b is complex64:
            return float32
        if b is complex128:
            return float64
        return self

    @property
    def is_ref_dtype(self) -> builtins.bool:
        return self._is_ref

    @property
    def _is_ref_dtype(self) -> builtins.bool:
        # TensorFlow's spelling, which TensorFlow 1.x programs use.
        return self._is_ref

    def _as_ref(self) -> DType:
        if self._is_ref:
            return self
        assert self._ref is not None
        return self._ref

    @property
    def is_numpy_compatible(self) -> builtins.bool:
        return self._base not in (resource, variant)

    @property
    def is_floating(self) -> builtins.bool:
        return self._base in (float16, float32, float64)

    @property
    def is_integer(self) -> builtins.bool:
        return self._base in _INTEGER

    @property
    def is_unsigned(self) -> builtins.bool:
        return self._base in (uint8, uint16, uint32, uint64)

    @property
    def is_complex(self) -> builtins.bool:
        return self._base in (complex64, complex128)

    @property
    def is_bool(self) -> builtins.bool:
        return self._base is bool

    @property
    def is_numeric(self) -> builtins.bool:
        return self.is_floating or self.is_integer or self.is_complex

    @property
    def is_quantized(self) -> builtins.bool:
        return False

    @property
    def size(self) -> int:
        """Bytes per element; 0 for string, resource and variant (as TensorFlow)."""
        if self._base in (string, resource, variant):
            return 0
        return np.dtype(self._np).itemsize

    @property
    def min(self) -> Any:
        return self._limit("min")

    @property
    def max(self) -> Any:
        return self._limit("max")

    def _limit(self, end: str) -> Any:
        b = self._base
        if b.is_floating:
            return getattr(np.finfo(b._np), end)
        if b.is_integer:
            return getattr(np.iinfo(b._np), end)
        raise TypeError(f"cannot find {end}imum value of {self.name}")

    def is_compatible_with(self, other: Any) -> builtins.bool:
        """Whether a value of type `other` may be used where `self` is expected:
        the same type, or `other` is the reference twin of `self` (not the reverse)."""
        other = as_dtype(other)
        return self is other or self is other._base

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __eq__(self, other: object) -> builtins.bool:
        if other is None:
            return False
        if isinstance(other, DType):
            return self is other
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other: object) -> builtins.bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self)

    def __reduce__(self) -> Any:
        return as_dtype, (self.name,)


def _make(name: str, np_dtype: Any, enum: int) -> DType:
    d = DType._intern(name, np_dtype, False, enum)
    r = DType._intern(name + "_ref", np_dtype, True, enum + 100)
    r._base = d
    d._ref = r
    return d


bool = _make("bool", np.bool_, 10)  # noqa: A001 - TensorFlow's public name
int8 = _make("int8", np.int8, 6)
int16 = _make("int16", np.int16, 5)
int32 = _make("int32", np.int32, 3)
int64 = _make("int64", np.int64, 9)
uint8 = _make("uint8", np.uint8, 4)
uint16 = _make("uint16", np.uint16, 17)
uint32 = _make("uint32", np.uint32, 22)
uint64 = _make("uint64", np.uint64, 23)
float16 = _make("float16", np.float16, 19)
float32 = _make("float32", np.float32, 1)
float64 = _make("float64", np.float64, 2)
complex64 = _make("complex64", np.complex64, 8)
complex128 = _make("complex128", np.complex128, 18)
string = _make("string", object, 7)
resource = _make("resource", None, 20)
variant = _make("variant", None, 21)
half = float16
double = float64

_INTEGER = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
_ALL = (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, float32, float64, complex64, complex128, string, resource, variant,
)
_BY_NAME: dict[str, DType] = {}
for _d in _ALL:
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d._as_ref().name] = _d._as_ref()
# TensorFlow's proto-style aliases.
for _alias, _d in (("half", float16), ("float", float32), ("double", float64)):
    _BY_NAME[_alias] = _d
    _BY_NAME[_alias + "_ref"] = _d._as_ref()
_BY_ENUM: dict[int, DType] = {}
for _d in _ALL:
    _BY_ENUM[_d._enum] = _d
    _BY_ENUM[_d._as_ref()._enum] = _d._as_ref()
_BY_NP: dict[Any, DType] = {np.dtype(d._np): d for d in _ALL if d._np not in (None, object)}

# Groups used by op definitions (`attrs=["T: numeric"]`).
FLOATING = (float16, float32, float64)
COMPLEX = (complex64, complex128)
INTEGER = _INTEGER
SIGNED = (int8, int16, int32, int64)
REAL = FLOATING + INTEGER
NUMERIC = REAL + COMPLEX
ALL_TYPES = _ALL


def as_dtype(type_value: Any) -> DType:
    """Convert a DType, name, enum, NumPy dtype or Python type to the interned DType.

    As TensorFlow: `float` gives float32 and `bool` bool, while `int`, `str`,
    `bytes` and `complex` are ambiguous and rejected (TypeError); NumPy string and
    object dtypes give `string`.
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        d = _BY_NAME.get(type_value)
        if d is not None:
            return d
    elif type_value is float:
        return float32
    elif type_value is builtins.bool:
        return bool
    elif any(type_value is t for t in (int, bytes, str, complex)):
        pass
    elif isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        d = _BY_ENUM.get(type_value)
        if d is not None:
            return d
    elif type_value is not None:
        try:
            npd = np.dtype(type_value)
        except (TypeError, ValueError):
            npd = None
        if npd is not None:
            if npd.kind in ("S", "U", "O"):
                return string
            d = _BY_NP.get(npd)
            if d is not None:
                return d
    raise TypeError(f"Cannot convert the argument `type_value`: {type_value!r} to a DType.")


_PY_BOOL = builtins.bool


def dtype_of_value(value: Any) -> DType:
    """The DType TensorFlow infers for a Python or NumPy value (tf.constant rules).

    Python floats become float32 and ints int32 (int64 if they do not fit, uint64
    beyond that), as in TensorFlow 1.x; NumPy arrays and scalars keep their dtype
    (float64 stays float64), while a list mixing NumPy scalars and Python numbers
    follows NumPy's promotion with float64 -> float32 and int64 -> int32 when the
    values fit.  None is a ValueError; values TensorFlow cannot convert (a list
    mixing strings and numbers, None inside a list, arbitrary objects, ints past
    64 bits) are TypeErrors.
    """
    if value is None:
        raise ValueError("None values not supported.")
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind == "O":
            _check_strings(value, np.asarray(value).reshape(-1).tolist())
            return string
        return as_dtype(value.dtype)
    if isinstance(value, _PY_BOOL):
        return bool
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return int32
        if -(2**63) <= value < 2**63:
            return int64
        if 0 <= value < 2**64:
            return uint64
        raise _cannot_convert(value)
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex128
    if isinstance(value, (bytes, str)):
        return string
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in ("U", "S", "O"):
        _check_strings(value, _leaves(value))
        return string
    if arr.dtype == np.float64:
        return float32
    if arr.dtype == np.int64:
        if arr.size and (arr.min() < -(2**31) or arr.max() >= 2**31):
            return int64
        return int32
    return as_dtype(arr.dtype)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, np.ndarray):
        return value.reshape(-1).tolist()
    return [value]


def _check_strings(value: Any, leaves: list[Any]) -> None:
    if not all(isinstance(v, (bytes, str)) for v in leaves):
        raise _cannot_convert(value)


def _cannot_convert(value: Any) -> TypeError:
    return TypeError(
        f"Failed to convert elements of {value!r} to Tensor. Consider casting elements to a "
        "supported type. See https://www.tensorflow.org/api_docs/python/tf/dtypes for "
        "supported TF dtypes."
    )
