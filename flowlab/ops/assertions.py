"""TensorFlow's remaining assertion helpers and predicates, built as TensorFlow builds
them (check_ops.py): `assert_integer`, `assert_rank_at_least`, `assert_rank_in`,
`assert_near`, `assert_same_float_dtype`, `assert_proper_iterable`,
`is_numeric_tensor`, `is_non_decreasing`, `is_strictly_increasing`.

Like the helpers in flowlab.ops.check_ops, a check decided when the graph is built is
a NoOp ("static_checks_determined_all_ok") or an immediate ValueError / TypeError with
TensorFlow's message; otherwise it is an Assert op that fails at run time.  The
monotonicity predicates compare neighbours of the flattened tensor (a `cond` returns
an empty difference for fewer than two elements) and reduce with `reduce_all`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, core_ops, math_ops, slicing
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.check_ops import Assert, _message_prefix, assert_rank, assert_type
from flowlab.ops.const_fold import constant_value

__all__ = ["assert_integer", "assert_rank_at_least", "assert_rank_in", "assert_near",
           "assert_same_float_dtype", "assert_proper_iterable", "is_numeric_tensor",
           "is_non_decreasing", "is_strictly_increasing"]


class _StaticRankFailed(ValueError):
    """TensorFlow's ('Static rank condition failed', actual, given) ValueError."""


def assert_integer(x: Any, message: Any = None, name: str | None = None) -> Any:
    """A NoOp when `x` has an integer dtype; TypeError otherwise (a static check)."""
    with get_default_graph().name_scope(name or "assert_integer"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(f'{_message_prefix(message)}Expected "x" to be integer type.  Found: '
                            f"{x.name} of dtype {x.dtype}")
        return core_ops.no_op(name="statically_determined_was_integer")


def _ranks_condition(x: Tensor, ranks: tuple[Tensor, ...], static_ok: Any, dynamic: Any,
                     data: list[Any], summarize: Any) -> Any:
    for r in ranks:
        assert_type(r, dtypes.int32)
    statics = tuple(constant_value(r) for r in ranks)
    if not any(s is None for s in statics):
        for s in statics:
            if np.ndim(s) != 0:
                raise ValueError("Rank must be a scalar.")
        x_rank = x.shape.ndims
        if x_rank is not None:
            if not static_ok(x_rank, statics):
                raise _StaticRankFailed("Static rank condition failed", x_rank, statics)
            return core_ops.no_op(name="static_checks_determined_all_ok")
    condition = dynamic(array_ops.rank(x), ranks)
    for r, s in zip(ranks, statics):
        if s is None:
            check = assert_rank(r, 0, data=["Rank must be a scalar. Received rank: ", r])
            condition = core_ops.with_dependencies([check], condition)
    return Assert(condition, data, summarize=summarize)


def assert_rank_at_least(x: Any, rank: Any, data: Any = None, summarize: Any = None,
                         message: Any = None, name: str | None = None) -> Any:
    """Asserts rank(x) >= rank: a NoOp when known now (ValueError when false), else an Assert."""
    with get_default_graph().name_scope(name or "assert_rank_at_least"):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = _message_prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} must have rank at least", rank, "Received shape: ",
                    array_ops.shape(x)]
        try:
            return _ranks_condition(x, (rank,), lambda a, g: a >= g[0],
                                    lambda a, g: math_ops.greater_equal(a, g[0]), data, summarize)
        except _StaticRankFailed as e:
            raise ValueError(f"{message}Tensor {x.name} must have rank at least {int(e.args[2][0])}.  "
                             f"Received rank {e.args[1]}, shape {x.shape}") from None


def _dynamic_rank_in(actual: Tensor, given: tuple[Tensor, ...]) -> Tensor:
    if not given:
        return convert_to_tensor(False)
    result = math_ops.equal(given[0], actual)
    for g in given[1:]:
        result = math_ops.logical_or(result, math_ops.equal(g, actual))
    return result


def assert_rank_in(x: Any, ranks: Any, data: Any = None, summarize: Any = None, message: Any = None,
                   name: str | None = None) -> Any:
    """Asserts that rank(x) is one of `ranks`."""
    with get_default_graph().name_scope(name or "assert_rank_in"):
        x = convert_to_tensor(x, name="x")
        ranks = tuple(convert_to_tensor(r, name="rank") for r in ranks)
        message = _message_prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} must have rank in", *ranks, "Received shape: ", array_ops.shape(x)]
        try:
            return _ranks_condition(x, ranks, lambda a, g: a in g, _dynamic_rank_in, data, summarize)
        except _StaticRankFailed as e:
            raise ValueError(f"{message}Tensor {x.name} must have rank in {tuple(int(r) for r in e.args[2])}.  "
                             f"Received rank {e.args[1]}, shape {x.shape}") from None


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, data: Any = None,
                summarize: Any = None, message: Any = None, name: str | None = None) -> Any:
    """Asserts |x - y| < atol + rtol * |y| elementwise (default tolerances: 10 eps)."""
    message = _message_prefix(message)
    with get_default_graph().name_scope(name or "assert_near"):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        dt = x.dtype.base_dtype
        dt = dt.real_dtype if dt.is_complex else dt
        eps = np.finfo(dt.as_numpy_dtype).eps
        rtol_t = convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol", dtype=dt)
        atol_t = convert_to_tensor(10 * eps if atol is None else atol, name="atol", dtype=dt)
        if data is None:
            data = [message, f"x and y not equal to tolerance rtol = {rtol_t}, atol = {atol_t}",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        tol = atol_t + rtol_t * math_ops.abs(y)
        diff = math_ops.abs(x - y)
        condition = math_ops.reduce_all(math_ops.less(diff, tol))
        return Assert(condition, data, summarize=summarize)


def assert_same_float_dtype(tensors: Any = None, dtype: Any = None) -> dtypes.DType:
    """The common floating dtype of `tensors` (and `dtype`), float32 when none is given.

    Raises:
      ValueError: when the tensors' dtypes differ, or the dtype is not floating.
    """
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    if tensors:
        dtype = _same_base_type(tensors, dtype)
    if not dtype:
        return dtypes.float32
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


def _same_base_type(items: Any, expected: Any) -> Any:
    original = expected
    for item in items:
        if item is not None:
            t = item.dtype.base_dtype
            if not expected:
                expected = t
            elif expected != t:
                break
    else:
        return expected
    expected, first = original, None
    for item in items:
        if item is not None:
            t = item.dtype.base_dtype
            if not expected:
                expected = t
                first = getattr(item, "name", str(item))
            elif expected != t:
                raise ValueError(f"{getattr(item, 'name', str(item))}, type={t}, must be of the same type "
                                 f"({expected}){f' as {first}' if first else ''}.")
    return expected


def assert_proper_iterable(values: Any) -> None:
    """TypeError unless `values` is an iterable other than a tensor, array or string."""
    from flowlab.ops.sparse_tensor import SparseTensor

    if isinstance(values, (Tensor, SparseTensor, np.ndarray, bytes, str)):
        raise TypeError(f'Expected argument "values" to be a "proper" iterable.  Found: {type(values)}')
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def is_numeric_tensor(tensor: Any) -> bool:
    """Whether `tensor` is a Tensor of a numeric (int, float or complex) dtype."""
    return isinstance(tensor, Tensor) and tensor.dtype.base_dtype.is_numeric and \
        tensor.dtype.base_dtype != dtypes.bool


def _diff(x: Any) -> Tensor:
    from flowlab.ops.cond import cond

    x = array_ops.reshape(x, [-1])
    if not is_numeric_tensor(x):
        raise TypeError("Expected x to be numeric")
    shorter = math_ops.less(array_ops.size(x), 2)
    s_len = array_ops.shape(x) - 1
    return cond(shorter, lambda: convert_to_tensor([], dtype=x.dtype),
                lambda: slicing.strided_slice(x, [1], [1] + s_len) - slicing.strided_slice(x, [0], s_len))


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """True when each element of the flattened `x` is >= the one before (empty: True)."""
    with get_default_graph().name_scope(name or "is_non_decreasing"):
        d = _diff(convert_to_tensor(x, name="x"))
        return math_ops.reduce_all(math_ops.less_equal(convert_to_tensor(0, dtype=d.dtype), d))


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """True when each element of the flattened `x` is > the one before (empty: True)."""
    with get_default_graph().name_scope(name or "is_strictly_increasing"):
        d = _diff(convert_to_tensor(x, name="x"))
        return math_ops.reduce_all(math_ops.less(convert_to_tensor(0, dtype=d.dtype), d))
