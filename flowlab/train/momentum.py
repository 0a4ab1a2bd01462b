"""`tf.train.MomentumOptimizer`: accum = accum * momentum + grad; var -= lr * accum
(Nesterov: var -= lr * grad + lr * momentum * accum)."""

from __future__ import annotations

from typing import Any

from flowlab.ops import math_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer

__all__ = ["MomentumOptimizer"]


class MomentumOptimizer(Optimizer):
    """Momentum (slot "momentum", named "<var>/Momentum")."""

    def __init__(self, learning_rate: Any, momentum: Any, use_locking: bool = False, name: str = "Momentum",
                 use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._momentum_tensor = convert_to_tensor(self._call_if_callable(self._momentum), name="momentum")

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        dt = var.dtype.base_dtype
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), math_ops.cast(self._learning_rate_tensor, dt), grad,
            math_ops.cast(self._momentum_tensor, dt), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        dt = var.dtype.base_dtype
        return training_ops.sparse_apply_momentum(
            var, self.get_slot(var, "momentum"), math_ops.cast(self._learning_rate_tensor, dt), grad.values,
            grad.indices, math_ops.cast(self._momentum_tensor, dt), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op
