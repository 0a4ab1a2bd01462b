"""Gradient functions by op type (the autodiff layer reads this registry).

    @gradient("Mul")
    def _mul_grad(op, grad):          # builds graph ops; one entry per input
        x, y = op.inputs
        return [grad * y, grad * x]

    not_differentiable("Shape")        # declared explicitly: no gradient flows
    no_gradient_defined("GuaranteeConst")  # as TensorFlow: asking for one is a LookupError

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


_UNDEFINED: Any = object()  # declared without a gradient: get_gradient_function raises


def no_gradient_defined(op_type: str) -> None:
    """Declare that TensorFlow defines no gradient for `op_type`: a gradient through
    it raises TensorFlow's LookupError, where a not-differentiable op gives None."""
    _register(op_type, _UNDEFINED)


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
    fn = _GRADIENTS.get(op_type, _UNDEFINED)
    if fn is _UNDEFINED:
        raise LookupError(f"No gradient defined for operation type '{op_type}'.")
    return fn


def is_declared(op_type: str) -> bool:
    return op_type in _GRADIENTS


def registered_gradients() -> dict[str, GradientFn | None]:
    """Op type -> gradient function (None: no gradient, declared either way)."""
    return {k: (None if v is _UNDEFINED else v) for k, v in _GRADIENTS.items()}
