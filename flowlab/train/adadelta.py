"""`tf.train.AdadeltaOptimizer` (Zeiler 2012), TensorFlow's ApplyAdadelta formulas."""

from __future__ import annotations

from typing import Any

from flowlab.ops import math_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer

__all__ = ["AdadeltaOptimizer"]


class AdadeltaOptimizer(Optimizer):
    """Adadelta (slots "accum" -> "<var>/Adadelta", "accum_update" -> "<var>/Adadelta_1")."""

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.95, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adadelta") -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = convert_to_tensor(self._call_if_callable(self._lr), name="lr")
        self._rho_t = convert_to_tensor(self._call_if_callable(self._rho), name="rho")
        self._epsilon_t = convert_to_tensor(self._call_if_callable(self._epsilon), name="epsilon")

    def _hyper(self, var: Any) -> list[Any]:
        dt = var.dtype.base_dtype
        return [math_ops.cast(t, dt) for t in (self._lr_t, self._rho_t, self._epsilon_t)]

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        return training_ops.apply_adadelta(
            var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"), *self._hyper(var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        return training_ops.sparse_apply_adadelta(
            var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"), *self._hyper(var),
            grad.values, grad.indices, use_locking=self._use_locking).op
