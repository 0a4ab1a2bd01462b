"""`tf.train.ProximalAdagradOptimizer`: Adagrad's per-element rate lr/sqrt(accum),
then the proximal step of l1/l2 regularization at that rate (FOBOS)."""

from __future__ import annotations

from typing import Any

from flowlab.ops import training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer
from flowlab.train.slot_values import constant_like, slot_from_value

__all__ = ["ProximalAdagradOptimizer"]


class ProximalAdagradOptimizer(Optimizer):
    """Proximal Adagrad (slot "accumulator", "<var>/ProximalAdagrad", starting at
    `initial_accumulator_value`).  Like TensorFlow, the hyper-parameters are not cast
    to the variable's dtype."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            val = constant_like(v, self._initial_accumulator_value)
            slot_from_value(self, v, val, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._l1_tensor = convert_to_tensor(self._l1_regularization_strength, name="l1_regularization_strength")
        self._l2_tensor = convert_to_tensor(self._l2_regularization_strength, name="l2_regularization_strength")

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        return training_ops.apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), self._learning_rate_tensor, self._l1_tensor,
            self._l2_tensor, grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        return training_ops.sparse_apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), self._learning_rate_tensor, self._l1_tensor,
            self._l2_tensor, grad.values, grad.indices, use_locking=self._use_locking).op
