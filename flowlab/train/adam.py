"""`tf.train.AdamOptimizer` (Kingma & Ba), as TensorFlow 1.x builds it.

Dense gradients: the fused ApplyAdam op (lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
var -= lr_t * m / (sqrt(v) + epsilon)).  Sparse gradients: TensorFlow's op-by-op
update (m and v decay everywhere, the touched rows get the gradient terms through
ScatterAdd).  beta1_power/beta2_power are non-slot variables colocated with the
first variable by name, multiplied by beta1/beta2 after every update.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.ops import core_ops, math_ops, state_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer

__all__ = ["AdamOptimizer"]


class AdamOptimizer(Optimizer):
    """Adam (slots "m" -> "<var>/Adam", "v" -> "<var>/Adam_1")."""

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self) -> tuple[Any, Any]:
        g = get_default_graph()
        return (self._get_non_slot_variable("beta1_power", graph=g),
                self._get_non_slot_variable("beta2_power", graph=g))

    def _create_slots(self, var_list: list[Any]) -> None:
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        c = self._call_if_callable
        self._lr_t = convert_to_tensor(c(self._lr), name="learning_rate")
        self._beta1_t = convert_to_tensor(c(self._beta1), name="beta1")
        self._beta2_t = convert_to_tensor(c(self._beta2), name="beta2")
        self._epsilon_t = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        dt = var.dtype.base_dtype
        b1p, b2p = self._get_beta_accumulators()
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), math_ops.cast(b1p, dt),
            math_ops.cast(b2p, dt), math_ops.cast(self._lr_t, dt), math_ops.cast(self._beta1_t, dt),
            math_ops.cast(self._beta2_t, dt), math_ops.cast(self._epsilon_t, dt), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        g = get_default_graph()
        dt = var.dtype.base_dtype
        b1p, b2p = self._get_beta_accumulators()
        b1p, b2p = math_ops.cast(b1p, dt), math_ops.cast(b2p, dt)
        lr_t = math_ops.cast(self._lr_t, dt)
        beta1_t = math_ops.cast(self._beta1_t, dt)
        beta2_t = math_ops.cast(self._beta2_t, dt)
        epsilon_t = math_ops.cast(self._epsilon_t, dt)
        lr = lr_t * math_ops.sqrt(1 - b2p) / (1 - b1p)
        lock = self._use_locking
        values, indices = grad.values, grad.indices
        m = self.get_slot(var, "m")
        m_scaled = values * (1 - beta1_t)
        m_t = state_ops.assign(m, m * beta1_t, use_locking=lock)
        with g.control_dependencies([m_t]):
            m_t = state_ops.scatter_add(m, indices, m_scaled, use_locking=lock)
        v = self.get_slot(var, "v")
        v_scaled = (values * values) * (1 - beta2_t)
        v_t = state_ops.assign(v, v * beta2_t, use_locking=lock)
        with g.control_dependencies([v_t]):
            v_t = state_ops.scatter_add(v, indices, v_scaled, use_locking=lock)
        v_sqrt = math_ops.sqrt(v_t)
        var_update = state_ops.assign_sub(var, lr * m_t / (v_sqrt + epsilon_t), use_locking=lock)
        return core_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops: list[Any], name_scope: str) -> Any:
        g = get_default_graph()
        with g.control_dependencies(update_ops):
            b1p, b2p = self._get_beta_accumulators()
            with g.colocate_with(b1p.op):
                update_beta1 = b1p.assign(b1p * self._beta1_t, use_locking=self._use_locking)
                update_beta2 = b2p.assign(b2p * self._beta2_t, use_locking=self._use_locking)
        return core_ops.group(*update_ops, update_beta1, update_beta2, name=name_scope)
