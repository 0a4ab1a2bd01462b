"""`tf.train.AdagradOptimizer`: accum += grad^2; var -= lr * grad / sqrt(accum)."""

from __future__ import annotations

from typing import Any

from flowlab.ops import init_ops, math_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer, _initializer

__all__ = ["AdagradOptimizer"]


class AdagradOptimizer(Optimizer):
    """Adagrad (slot "accumulator", "<var>/Adagrad", starting at
    `initial_accumulator_value`)."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1, use_locking: bool = False,
                 name: str = "Adagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            dtype = v.dtype.base_dtype
            init = _initializer(init_ops.constant_initializer(self._initial_accumulator_value, dtype=dtype), v)
            self._get_or_make_slot_with_initializer(v, init, v.shape, dtype, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        return training_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"),
            math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        return training_ops.sparse_apply_adagrad(
            var, self.get_slot(var, "accumulator"),
            math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype), grad.values, grad.indices,
            use_locking=self._use_locking).op
