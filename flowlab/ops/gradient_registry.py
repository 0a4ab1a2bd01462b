"""Gradient functions by op type (the autodiff layer reads this registry).

    @gradient("Mul")
    def _mul_grad(op, grad):          # builds graph ops; one entry per input
        x, y = op.inputs
        return [grad * y, grad * x]

    not_differentiable("Shape")        # declared explicitly: no gradient flows

An op type must be either registered here or declared not differentiable; the
table-driven gradient test walks the op registry and fails on anything else.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

GradientFn = Callable[..., Any]

_GRADIENTS: dict[str, GradientFn | None] = {}
_WHERE: dict[str, str] = {}


def gradient(op_type: str) -> Callable[[GradientFn], GradientFn]:
    """Register the decorated function as the gradient of `op_type`."""

    def register(fn: GradientFn) -> GradientFn:
        _register(op_type, fn)
        return fn

    return register


def not_differentiable(op_type: str) -> None:
    """Declare that no gradient flows through `op_type` (its gradient is None)."""
    _register(op_type, None)


def _register(op_type: str, fn: GradientFn | None) -> None:
    if op_type in _GRADIENTS:
        raise ValueError(
            f"Gradient for op type '{op_type}' is already registered (first at {_WHERE[op_type]})."
        )
    frame = traceback.extract_stack(limit=3)[0]
    _GRADIENTS[op_type] = fn
    _WHERE[op_type] = f"{frame.filename}:{frame.lineno}"


def get_gradient_function(op_type: str) -> GradientFn | None:
    """The gradient function; None if declared not differentiable; KeyError if unknown."""
    try:
        return _GRADIENTS[op_type]
    except KeyError:
        raise LookupError(f"No gradient defined for operation type '{op_type}'.") from None


def is_declared(op_type: str) -> bool:
    return op_type in _GRADIENTS


def registered_gradients() -> dict[str, GradientFn | None]:
    return dict(_GRADIENTS)
