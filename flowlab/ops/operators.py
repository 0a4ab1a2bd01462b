"""Python operators on `Tensor`: `x + 1`, `1 - x`, `a @ b`, `-x`, `x < y`, `m & n`,
`x[1:, ::2]`, installed through `Tensor._override_operator`.

As in TensorFlow 1.x: each binary operator opens a name scope named after it
("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
"xor") and builds its op under that name; the Python value on the other side becomes
a constant of the tensor's dtype inside the scope ("add/y", or "sub/x" for `1 - t`),
so `1 - x_float32` is float32.  `/` is true division (ints become floats), `&`, `|`,
`^`, `~` are logical for bool tensors and bitwise for integers, comparisons build
Less/Greater/..., and `==`/`!=` stay Python identity (TensorFlow 1.x behaviour), so
tensors remain usable as dict keys.  NumPy arrays on the left defer to the tensor
(`Tensor.__array_priority__`), so `np_array + t` builds an op as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of

__all__: list[str] = []


def _is_bool(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.base_dtype is dtypes.bool


def _and(x: Any, y: Any, name: str | None = None) -> Tensor:
    if _is_bool(x):
        return math_ops.logical_and(x, y, name=name)
    return math_ops._op("BitwiseAnd", "BitwiseAnd", x=x, y=y)


def _or(x: Any, y: Any, name: str | None = None) -> Tensor:
    if _is_bool(x):
        return math_ops.logical_or(x, y, name=name)
    return math_ops._op("BitwiseOr", "BitwiseOr", x=x, y=y)


def _xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    if _is_bool(x):
        return math_ops.logical_xor(x, y, name=name)
    return math_ops._op("BitwiseXor", "BitwiseXor", x=x, y=y)


def _invert(x: Any, name: str | None = None) -> Tensor:
    if _is_bool(x):
        return apply_op("LogicalNot", name=name or "LogicalNot", x=x)
    return apply_op("Invert", name=name or "Invert", x=x)


def _override_binary(op_name: str, func: Callable[..., Tensor]) -> None:
    """Install `__op__` and `__rop__` building `func(x, y, name=scope)`."""

    def binary(x: Any, y: Any) -> Any:
        g = x.graph if isinstance(x, Tensor) else graph_of((x, y))
        with g.as_default(), g.name_scope(op_name) as scope:
            try:
                return func(x, y, name=scope)
            except (TypeError, ValueError) as e:
                # Let the right operand try its own reflected operator (e.g. a Variable).
                r_op = getattr(type(y), f"__r{op_name}__", None)
                if r_op is None or isinstance(y, (Tensor, int, float, complex, bool)):
                    raise
                try:
                    out = r_op(y, x)
                except (TypeError, ValueError):
                    raise e from None
                if out is NotImplemented:
                    raise
                return out

    def reflected(y: Any, x: Any) -> Any:
        g = y.graph if isinstance(y, Tensor) else graph_of((x, y))
        with g.as_default(), g.name_scope(op_name) as scope:
            yt = convert_to_tensor(y)
            xt = convert_to_tensor(x, dtype=yt.dtype.base_dtype, name="x")
            return func(xt, yt, name=scope)

    binary.__name__ = f"__{op_name}__"
    reflected.__name__ = f"__r{op_name}__"
    Tensor._override_operator(f"__{op_name}__", binary)
    Tensor._override_operator(f"__r{op_name}__", reflected)


def _getitem(tensor: Any, key: Any) -> Tensor:
    from flowlab.ops.array_ops import _slice_helper

    return _slice_helper(tensor, key)


def _install() -> None:
    _override_binary("add", math_ops.add)
    _override_binary("sub", math_ops.subtract)
    _override_binary("mul", math_ops.multiply)
    _override_binary("truediv", math_ops.truediv)
    _override_binary("floordiv", math_ops.floordiv)
    _override_binary("mod", math_ops.floormod)
    _override_binary("pow", math_ops.pow)
    _override_binary("matmul", math_ops.matmul)
    _override_binary("and", _and)
    _override_binary("or", _or)
    _override_binary("xor", _xor)
    Tensor._override_operator("__lt__", math_ops.less)
    Tensor._override_operator("__le__", math_ops.less_equal)
    Tensor._override_operator("__gt__", math_ops.greater)
    Tensor._override_operator("__ge__", math_ops.greater_equal)
    Tensor._override_operator("__neg__", math_ops.negative)
    Tensor._override_operator("__abs__", math_ops.abs)
    Tensor._override_operator("__invert__", _invert)
    Tensor._override_operator("__getitem__", _getitem)


_install()
