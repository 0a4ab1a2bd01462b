"""`tf.train.GradientDescentOptimizer`: var -= learning_rate * grad."""

from __future__ import annotations

from typing import Any

from flowlab.ops import math_ops, state_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.train.optimizer import Optimizer

__all__ = ["GradientDescentOptimizer"]


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent (ApplyGradientDescent; sparse gradients: ScatterSub of
    the touched rows, repeated indices accumulating)."""

    def __init__(self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor: Any = None

    def _prepare(self) -> None:
        lr = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = convert_to_tensor(lr, name="learning_rate")

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        return training_ops.apply_gradient_descent(
            var, math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype), grad,
            use_locking=self._use_locking).op

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Any) -> Any:
        delta = grad.values * math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return state_ops.scatter_sub(var, grad.indices, delta, use_locking=self._use_locking)
