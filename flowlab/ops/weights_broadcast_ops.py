"""Loss weights checked and broadcast against values, as TensorFlow's weights_broadcast_ops.

`assert_broadcastable(weights, values)` returns the op the weighted computation is
made to depend on: a NoOp when the shapes decide it at build time
(`static_scalar_check_success` for scalar weights, `static_dims_check_success` when
every weight dimension is 1 or the value's), a ValueError when they refute it, and
else an `Assert` evaluated at run time.  `broadcast_weights` multiplies the weights by
`ones_like(values)` under that check, unless both shapes are known and compatible.

The run-time check differs from TensorFlow's in one way: TensorFlow compares the
dimensions with a DenseToDenseSetOperation (`has_invalid_dims/SetDifference...`),
which flowlab does not have; here each weight dimension is compared with 1 and with
the value's dimension (Equal, LogicalOr, All), the same test.  The ops around it
(`is_scalar`, the `is_valid_shape` cond, the Assert's data) are TensorFlow's.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.check_ops import Assert
from flowlab.ops.cond import cond
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import no_op
from flowlab.ops.nn_ops import _name_scope

__all__: list[str] = []

_PREFIX = "weights can not be broadcast to values."


def _has_valid_dims(weights_shape: Tensor, values_shape: Tensor) -> Tensor:
    with _name_scope(None, "has_invalid_dims", [weights_shape, values_shape]) as scope:
        ok = math_ops.logical_or(math_ops.equal(weights_shape, values_shape),
                                 math_ops.equal(weights_shape, 1))
        return math_ops.reduce_all(ok, name=scope)


def _has_valid_nonscalar_shape(weights_rank: Tensor, weights_shape: Tensor, values_rank: Tensor,
                               values_shape: Tensor) -> Tensor:
    with _name_scope(None, "has_valid_nonscalar_shape",
                     [weights_rank, weights_shape, values_rank, values_shape]) as scope:
        is_same_rank = math_ops.equal(values_rank, weights_rank, name="is_same_rank")
        return cond(is_same_rank, lambda: _has_valid_dims(weights_shape, values_shape),
                    lambda: is_same_rank, name=scope)


def assert_broadcastable(weights: Any, values: Any) -> Operation:
    """The check that `weights` broadcast to `values` (scalar, or same rank with each
    dimension 1 or equal): a NoOp, a ValueError, or a run-time Assert."""
    with _name_scope(None, "assert_broadcastable", [weights, values]) as scope:
        with _name_scope(None, "weights", [weights]) as weights_scope:
            weights = convert_to_tensor(weights, name=weights_scope)
            weights_shape = array_ops.shape(weights, name="shape")
            weights_rank = array_ops.rank(weights, name="rank")
        weights_rank_static = constant_value(weights_rank)
        with _name_scope(None, "values", [values]) as values_scope:
            values = convert_to_tensor(values, name=values_scope)
            values_shape = array_ops.shape(values, name="shape")
            values_rank = array_ops.rank(values, name="rank")
        values_rank_static = constant_value(values_rank)
        if weights_rank_static is not None and values_rank_static is not None:
            if int(weights_rank_static) == 0:
                return no_op(name="static_scalar_check_success")
            if int(weights_rank_static) != int(values_rank_static):
                raise ValueError(
                    f"{_PREFIX} values.rank={int(values_rank_static)}. weights.rank="
                    f"{int(weights_rank_static)}. values.shape={values.shape}. weights.shape="
                    f"{weights.shape}. Received weights={weights}, values={values}")
            if weights.shape.is_fully_defined() and values.shape.is_fully_defined():
                ws, vs = weights.shape.as_list(), values.shape.as_list()
                for i, (w, v) in enumerate(zip(ws, vs)):
                    if w not in (1, v):
                        raise ValueError(
                            f"{_PREFIX} Mismatch at dim {i}. values.shape={vs}, weights.shape="
                            f"{ws}. Received weights={weights}, values={values}")
                return no_op(name="static_dims_check_success")
        is_scalar = math_ops.equal(0, weights_rank, name="is_scalar")
        data = [_PREFIX, "weights.shape=", weights.name, weights_shape,
                "values.shape=", values.name, values_shape, "is_scalar=", is_scalar]
        is_valid_shape = cond(
            is_scalar, lambda: is_scalar,
            lambda: _has_valid_nonscalar_shape(weights_rank, weights_shape, values_rank,
                                               values_shape),
            name="is_valid_shape")
        return Assert(is_valid_shape, data, name=scope)


def broadcast_weights(weights: Any, values: Any) -> Tensor:
    """`weights` broadcast to the shape of `values` (unchanged when both shapes are
    known and compatible), after `assert_broadcastable`."""
    with _name_scope(None, "broadcast_weights", [weights, values]) as scope:
        values = convert_to_tensor(values, name="values")
        weights = convert_to_tensor(weights, dtype=values.dtype.base_dtype, name="weights")
        ws, vs = weights.shape, values.shape
        if ws.is_fully_defined() and vs.is_fully_defined() and ws.is_compatible_with(vs):
            return weights
        with get_default_graph().control_dependencies([assert_broadcastable(weights, values)]):
            return math_ops.multiply(weights, array_ops.ones_like(values), name=scope)
