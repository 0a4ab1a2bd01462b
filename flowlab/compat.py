"""`tf.compat`: text/bytes conversions, type collections, and `tf.compat.v1`.

Programs written for TensorFlow 1.15+ call `tf.compat.v1.placeholder` and
`tf.compat.as_str(...)`; here `tf.compat.v1` is flowlab itself (flowlab is TensorFlow
1.x graph mode), and the helpers behave as TensorFlow's `tensorflow/python/util/
compat.py`: the same conversions, the same TypeErrors, LookupError for an unknown
encoding.

    tf.compat.as_bytes("héllo")        # b'h\\xc3\\xa9llo'
    tf.compat.as_str(b"abc")           # 'abc'
    tf.compat.as_str_any(3)            # '3'
"""

from __future__ import annotations

import codecs
import numbers as _numbers
import sys
from typing import Any

import numpy as _np

from flowlab.graph.tensor_shape import dimension_value

__all__ = [
    "as_bytes", "as_text", "as_str", "as_str_any", "path_to_str", "path_to_bytes",
    "integral_types", "real_types", "complex_types", "bytes_or_text_types",
    "dimension_value",
]


def as_bytes(bytes_or_text: Any, encoding: str = "utf-8") -> bytes:
    """`bytes` of a `bytearray`, `bytes` or `str` (encoded with `encoding`)."""
    encoding = codecs.lookup(encoding).name
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Any, encoding: str = "utf-8") -> str:
    """`str` of a `str` or `bytes` (decoded with `encoding`)."""
    encoding = codecs.lookup(encoding).name
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    # TensorFlow formats with `%` and the value itself, so a tuple argument raises
    # the formatting TypeError ("not all arguments converted") as it does there.
    raise TypeError("Expected binary or unicode string, got %r" % bytes_or_text)  # noqa: UP031


def as_str(bytes_or_text: Any, encoding: str = "utf-8") -> str:
    """`as_text` under its Python 3 name (TensorFlow exports both)."""
    return as_text(bytes_or_text, encoding)


def as_str_any(value: Any, encoding: str = "utf-8") -> str:
    """`str(value)`, except that `bytes` are decoded with `encoding`."""
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path: Any) -> Any:
    """The `str` of an `os.PathLike`; anything else is returned as it is."""
    if hasattr(path, "__fspath__"):
        path = as_str_any(path.__fspath__())
    return path


def path_to_bytes(path: Any) -> bytes:
    """The `bytes` of an `os.PathLike` or a string."""
    if hasattr(path, "__fspath__"):
        path = path.__fspath__()
    return as_bytes(path)


# NumPy scalars are not registered with `numbers`, so the collections name them too.
integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)
complex_types = (_numbers.Complex, _np.number)
bytes_or_text_types = (bytes, str)


def __getattr__(name: str) -> Any:
    # `tf.compat.v1` is flowlab itself; looked up lazily because flowlab imports this
    # module while it is itself being imported.
    if name == "v1":
        return sys.modules["flowlab"]  # the package, always imported before its modules
    raise AttributeError(f"module 'flowlab.compat' has no attribute '{name}'")
