"""Static values of tensors, for shape functions (`tf.get_static_value`).

`constant_value(t)` returns the NumPy value of `t` when it can be known while the
graph is being built (a Const, the Shape of a fully defined tensor, a Pack of known
values, ...), else None.  Op families register evaluators for their op types:

    @constant_evaluator("Shape")
    def _shape(op):
        s = op.inputs[0].shape
        return np.array(s.as_list(), dtype) if s.is_fully_defined() else None
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor

_EVALUATORS: dict[str, Callable[[Operation], Any]] = {}


def constant_evaluator(op_type: str) -> Callable[[Callable[[Operation], Any]], Callable[[Operation], Any]]:
    """Register `fn(op) -> value of output 0 or list of output values, or None`."""

    def register(fn: Callable[[Operation], Any]) -> Callable[[Operation], Any]:
        if op_type in _EVALUATORS:
            raise ValueError(f"constant evaluator for {op_type} already registered")
        _EVALUATORS[op_type] = fn
        return fn

    return register


def constant_value(t: Any) -> np.ndarray | None:
    """The value of `t` if it is statically known, else None."""
    if not isinstance(t, Tensor):
        if hasattr(t, "_as_graph_element"):
            return None
        return np.asarray(t)
    fn = _EVALUATORS.get(t.op.type)
    if fn is None:
        return None
    try:
        v = fn(t.op)
    except Exception:  # noqa: BLE001 - a static evaluation that fails is simply unknown
        return None
    if isinstance(v, list):
        v = v[t.value_index]
    elif t.value_index != 0:
        return None
    return v


@constant_evaluator("Const")
def _const(op: Operation) -> Any:
    return op.get_attr("value")


@constant_evaluator("Identity")
def _identity(op: Operation) -> Any:
    return constant_value(op.inputs[0])
