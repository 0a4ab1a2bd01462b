"""`tf.train.FtrlOptimizer`: Follow The Regularized Leader (McMahan et al., 2013).

Slots "accum" (the sum of squared gradients, from `initial_accumulator_value`) and
"linear" (zeros), named "<var>/Ftrl" and "<var>/Ftrl_1" unless `accum_name` /
`linear_name` say otherwise.  ApplyFtrl, or ApplyFtrlV2 when
`l2_shrinkage_regularization_strength` > 0; `beta` is folded into l2 as
l2 + beta / (2 * max(lr, 1e-36)), built as graph ops like TensorFlow's.
"""

from __future__ import annotations

from typing import Any

from flowlab.ops import array_ops, math_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer

__all__ = ["FtrlOptimizer"]


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal with l1, l2 and l2-shrinkage regularization."""

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False, name: str = "Ftrl",
                 accum_name: str | None = None, linear_name: str | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float | None = None) -> None:
        super().__init__(use_locking, name)
        for what, value, sign in [
            ("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
            ("learning_rate_power", -learning_rate_power, "negative or zero"),
            ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
            ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
            ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, "positive or zero"),
        ]:
            if value < 0.0:
                shown = learning_rate_power if what == "learning_rate_power" else value
                raise ValueError(f"{what} {shown:f} needs to be {sign}")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list: list[Any]) -> None:
        value = self._initial_accumulator_value

        def accum_initializer(shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
            return array_ops.ones(shape, dtype=dtype) * value

        for v in var_list:
            self._get_or_make_slot_with_initializer(
                v, accum_initializer, v.shape, v.dtype.base_dtype, "accum", self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._l1_tensor = convert_to_tensor(self._l1_regularization_strength, name="l1_regularization_strength")
        # beta is folded into l2 so that the kernels need no beta input (TensorFlow's way).
        self._adjusted_l2_tensor = convert_to_tensor(
            self._l2_regularization_strength
            + self._beta / (2.0 * math_ops.maximum(self._call_if_callable(self._learning_rate), 1e-36)),
            name="adjusted_l2_regularization_strength")
        self._beta_tensor = convert_to_tensor(self._beta, name="beta")
        self._l2_shrinkage_tensor = convert_to_tensor(
            self._l2_shrinkage_regularization_strength, name="l2_shrinkage_regularization_strength")
        self._learning_rate_power_tensor = convert_to_tensor(self._learning_rate_power, name="learning_rate_power")

    def _hyper(self, var: Any) -> tuple[Any, ...]:
        dtype = var.dtype.base_dtype
        return tuple(math_ops.cast(t, dtype) for t in (
            self._learning_rate_tensor, self._l1_tensor, self._adjusted_l2_tensor, self._l2_shrinkage_tensor,
            self._learning_rate_power_tensor))

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        lr, l1, l2, shrinkage, lr_power = self._hyper(var)
        if self._l2_shrinkage_regularization_strength <= 0.0:
            return training_ops.apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power,
                                           use_locking=self._use_locking).op
        return training_ops.apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, shrinkage, lr_power,
                                          use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        lr, l1, l2, shrinkage, lr_power = self._hyper(var)
        if self._l2_shrinkage_regularization_strength <= 0.0:
            return training_ops.sparse_apply_ftrl(var, accum, linear, grad.values, grad.indices, lr, l1, l2,
                                                  lr_power, use_locking=self._use_locking).op
        return training_ops.sparse_apply_ftrl_v2(var, accum, linear, grad.values, grad.indices, lr, l1, l2,
                                                 shrinkage, lr_power, use_locking=self._use_locking).op
