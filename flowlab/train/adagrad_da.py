"""`tf.train.AdagradDAOptimizer`: Adagrad dual averaging.  The variable is computed
afresh each step from the sum of the gradients, the sum of their squares and the
step count T (= global_step + 1): var = -lr * shrink(g, l1*T) / (l2*T*lr + sqrt(gg)).
The global step is required; the optimizer reads it (its own `identity(gs) + 1`,
made in `_prepare` as TensorFlow does) and does not increment it unless
`minimize`/`apply_gradients` is given it too."""

from __future__ import annotations

from typing import Any

from flowlab.ops import core_ops, math_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer
from flowlab.train.slot_values import constant_like, slot_from_value

__all__ = ["AdagradDAOptimizer"]


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (slots "gradient_accumulator" = "<var>/AdagradDA" and
    "gradient_squared_accumulator" = "<var>/AdagradDA_1")."""

    def __init__(self, learning_rate: Any, global_step: Any, initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "AdagradDA") -> None:
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_gradient_squared_accumulator_value = initial_gradient_squared_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._global_step = global_step
        self._global_step_on_worker: Any = None

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            g_val = constant_like(v, 0.0)
            gg_val = constant_like(v, self._initial_gradient_squared_accumulator_value)
            slot_from_value(self, v, g_val, "gradient_accumulator", self._name)
            slot_from_value(self, v, gg_val, "gradient_squared_accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        g = self._learning_rate_tensor.graph
        with g.colocate_with(self._learning_rate_tensor.op):
            self._global_step_on_worker = core_ops.identity(self._global_step) + 1

    def _args(self, var: Any) -> tuple[Any, ...]:
        dtype = var.dtype.base_dtype
        with var.graph.device(var.device):
            global_step = core_ops.identity(self._global_step_on_worker)
        return (math_ops.cast(self._learning_rate_tensor, dtype),
                math_ops.cast(self._l1_regularization_strength, dtype),
                math_ops.cast(self._l2_regularization_strength, dtype), global_step)

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        g_acc = self.get_slot(var, "gradient_accumulator")
        gg_acc = self.get_slot(var, "gradient_squared_accumulator")
        lr, l1, l2, global_step = self._args(var)
        return training_ops.apply_adagrad_da(var, g_acc, gg_acc, grad, lr, l1, l2, global_step,
                                             use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        g_acc = self.get_slot(var, "gradient_accumulator")
        gg_acc = self.get_slot(var, "gradient_squared_accumulator")
        lr, l1, l2, global_step = self._args(var)
        return training_ops.sparse_apply_adagrad_da(var, g_acc, gg_acc, grad.values, grad.indices, lr, l1, l2,
                                                    global_step, use_locking=self._use_locking).op
