"""Static, partially known tensor shapes (TensorFlow 1.x `TensorShape`/`Dimension`).

A shape is either of unknown rank (`dims is None`) or a tuple of dimensions, each a
non-negative int or None (unknown).  Shapes are immutable values; `merge_with` is the
one way two pieces of shape knowledge combine, and it fails with ValueError naming
both shapes when they conflict.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from typing import Any


class Dimension:
    """One dimension of a TensorShape: `.value` is an int or None (unknown).

    Arithmetic and comparison follow TensorFlow 1.x: an unknown operand gives an
    unknown result (comparisons give None).
    """

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError(
                    "Dimension value must be integer or None or have an __index__ method, "
                    f"got value '{value!r}' with type '{type(value)!r}'"
                ) from None
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    @property
    def value(self) -> int | None:
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("cannot convert an unknown Dimension to int")
        return self._value

    __index__ = __int__

    def __eq__(self, other: object) -> Any:
        try:
            o = _dim_value(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or o is None:
            return None
        return self._value == o

    def __ne__(self, other: object) -> Any:
        r = self.__eq__(other)
        if r is None or r is NotImplemented:
            return r
        return not r

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def is_compatible_with(self, other: Any) -> bool:
        o = _dim_value(other)
        return self._value is None or o is None or self._value == o

    def merge_with(self, other: Any) -> Dimension:
        o = _dim_value(other)
        if self._value is None:
            return Dimension(o)
        if o is not None and o != self._value:
            raise ValueError(f"Dimensions {self} and {Dimension(o)} are not compatible")
        return self

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {Dimension(_dim_value(other))} are not compatible")

    def _arith(self, other: Any, fn: Any, reflected: bool = False) -> Dimension:
        try:
            o = _dim_value(other)
        except TypeError:
            return NotImplemented
        if self._value is None or o is None:
            return Dimension(None)
        return Dimension(fn(o, self._value) if reflected else fn(self._value, o))

    def __add__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a - b, reflected=True)

    def __mul__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a // b)

    def __rfloordiv__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a // b, reflected=True)

    def __truediv__(self, other: Any) -> Dimension:
        raise TypeError(
            f"unsupported operand type(s) for /: 'Dimension' and '{type(other).__name__}', "
            "please use // instead"
        )

    def __mod__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a % b)

    def __rmod__(self, other: Any) -> Dimension:
        return self._arith(other, lambda a, b: a % b, reflected=True)

    def _cmp(self, other: Any, fn: Any) -> Any:
        try:
            o = _dim_value(other)
        except TypeError:
            return NotImplemented
        if self._value is None or o is None:
            return None
        return fn(self._value, o)

    def __lt__(self, other: Any) -> Any:
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other: Any) -> Any:
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other: Any) -> Any:
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other: Any) -> Any:
        return self._cmp(other, lambda a, b: a >= b)


def _dim_value(d: Any) -> int | None:
    if isinstance(d, Dimension):
        return d.value
    if d is None:
        return None
    return Dimension(d).value


def dimension_value(d: Any) -> int | None:
    """The int (or None) of a Dimension or int, as `tf.compat.dimension_value`."""
    return _dim_value(d)


class TensorShape:
    """A possibly partial shape: `TensorShape([None, 3])`, `TensorShape(None)`."""

    __slots__ = ("_dims",)
    _dims: tuple[int | None, ...] | None

    def __init__(self, dims: Any) -> None:
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        else:
            # One int-like (3, np.int64(3), a 0-d array) is a rank-1 shape; anything
            # iterable (list, tuple, 1-d array) lists the dims.
            if isinstance(dims, (int, Dimension)) or getattr(dims, "ndim", None) == 0:
                dims = [dims]
            self._dims = tuple(Dimension(d).value for d in dims)

    # --- access -------------------------------------------------------------------
    @property
    def dims(self) -> list[Dimension] | None:
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self) -> list[int | None]:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self) -> tuple[int | None, ...] | None:
        """The dims as a plain tuple of ints/None (None for unknown rank)."""
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:  # type: ignore[union-attr]
            n *= d  # type: ignore[operator]
        return n

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator[Any]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key: Any) -> Any:
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __bool__(self) -> bool:
        return self._dims is not None

    # --- combination --------------------------------------------------------------
    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other: Any) -> TensorShape:
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if len(self._dims) != len(other._dims) or not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_has_rank(self, rank: int) -> None:
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank: int) -> TensorShape:
        if self._dims is None:
            return unknown_shape(rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def assert_same_rank(self, other: Any) -> None:
        other = as_shape(other)
        if self._dims is not None and other._dims is not None and len(self._dims) != len(
            other._dims
        ):
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both (unknown where they differ)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other: Any) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return as_shape(other).concatenate(self)

    # --- values -------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({[Dimension(d) for d in self._dims]!r})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        if len(self._dims) == 1:
            inner += ","
        return f"({inner})"

    def __reduce__(self) -> Any:
        return TensorShape, (None if self._dims is None else list(self._dims),)


def as_shape(shape: Any) -> TensorShape:
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)


def unknown_shape(rank: int | None = None) -> TensorShape:
    if rank is None:
        return TensorShape(None)
    return TensorShape([None] * rank)


def scalar() -> TensorShape:
    return TensorShape(())


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape:
    """NumPy broadcasting of two partial shapes; ValueError when incompatible."""
    if a._dims is None or b._dims is None:
        return TensorShape(None)
    n = max(len(a._dims), len(b._dims))
    one: list[int | None] = [1]
    x = one * (n - len(a._dims)) + list(a._dims)
    y = one * (n - len(b._dims)) + list(b._dims)
    out: list[int | None] = []
    for p, q in zip(x, y):
        if p == 1:
            out.append(q)
        elif q == 1:
            out.append(p)
        elif p is None or q is None:
            out.append(p if q is None else q)
        elif p == q:
            out.append(p)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {a} and {b}")
    return TensorShape(out)


def shapes_of(values: Iterable[Any]) -> list[TensorShape]:
    return [as_shape(v) for v in values]
