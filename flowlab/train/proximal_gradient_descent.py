"""`tf.train.ProximalGradientDescentOptimizer`: a gradient step, then the proximal
(FOBOS) step of l1/l2 regularization: var = sign(v) * max(|v| - lr*l1, 0) / (1 + lr*l2)
with v = var - lr * grad.  No slots."""

from __future__ import annotations

from typing import Any

from flowlab.ops import training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer

__all__ = ["ProximalGradientDescentOptimizer"]


class ProximalGradientDescentOptimizer(Optimizer):
    """Proximal gradient descent (ApplyProximalGradientDescent and its sparse form).
    Like TensorFlow, the hyper-parameters are not cast to the variable's dtype."""

    def __init__(self, learning_rate: Any, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._l1_tensor = convert_to_tensor(self._l1_regularization_strength, name="l1_regularization_strength")
        self._l2_tensor = convert_to_tensor(self._l2_regularization_strength, name="l2_regularization_strength")

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        return training_ops.apply_proximal_gradient_descent(
            var, self._learning_rate_tensor, self._l1_tensor, self._l2_tensor, grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        return training_ops.sparse_apply_proximal_gradient_descent(
            var, self._learning_rate_tensor, self._l1_tensor, self._l2_tensor, grad.values, grad.indices,
            use_locking=self._use_locking).op
