"""`tf.train.RMSPropOptimizer` (with momentum, and the centered variant)."""

from __future__ import annotations

from typing import Any

from flowlab.ops import init_ops, math_ops, training_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.train.optimizer import Optimizer, _initializer

__all__ = ["RMSPropOptimizer"]


class RMSPropOptimizer(Optimizer):
    """RMSProp: slots "rms" (starting at ones), "mg" (centered only) and "momentum",
    named "<var>/RMSProp", "<var>/RMSProp_1", ... in that order."""

    def __init__(self, learning_rate: Any, decay: Any = 0.9, momentum: Any = 0.0, epsilon: Any = 1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            dtype = v.dtype.base_dtype
            init = _initializer(init_ops.ones_initializer(dtype=dtype), v)
            self._get_or_make_slot_with_initializer(v, init, v.shape, dtype, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        c = self._call_if_callable
        self._learning_rate_tensor = convert_to_tensor(c(self._learning_rate), name="learning_rate")
        self._decay_tensor = convert_to_tensor(c(self._decay), name="decay")
        self._momentum_tensor = convert_to_tensor(c(self._momentum), name="momentum")
        self._epsilon_tensor = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _hyper(self, var: Any) -> list[Any]:
        dt = var.dtype.base_dtype
        return [math_ops.cast(t, dt) for t in (self._learning_rate_tensor, self._decay_tensor,
                                               self._momentum_tensor, self._epsilon_tensor)]

    def _apply(self, var: Any, grad: Any, indices: Any = None) -> Any:
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        h = self._hyper(var)
        extra = [] if indices is None else [indices]
        lock = self._use_locking
        if self._centered:
            mg = self.get_slot(var, "mg")
            fn = training_ops.apply_centered_rms_prop if indices is None else \
                training_ops.sparse_apply_centered_rms_prop
            return fn(var, mg, rms, mom, *h, grad, *extra, use_locking=lock).op
        fn = training_ops.apply_rms_prop if indices is None else training_ops.sparse_apply_rms_prop
        return fn(var, rms, mom, *h, grad, *extra, use_locking=lock).op

    def _apply_dense(self, grad: Any, var: Any) -> Any:
        return self._apply(var, grad)

    def _apply_sparse(self, grad: Any, var: Any) -> Any:
        return self._apply(var, grad.values, grad.indices)
