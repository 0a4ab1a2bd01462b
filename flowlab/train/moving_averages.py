"""`tf.train.ExponentialMovingAverage`: shadow variables that track other variables or
tensors, updated by a graph of primitive ops.

As TensorFlow builds it (training/moving_averages.py): `apply(var_list)` makes one
shadow per variable, named "<var>/ExponentialMovingAverage", colocated with it and
initialized from the variable's initialized value (`cond(is_variable_initialized(v),
v.read_value, v.initial_value)`), and adds the variable to MOVING_AVERAGE_VARIABLES;
a tensor gets a zeros shadow.  The update is `shadow -= (shadow - value) * (1 - decay)`
with `decay = min(decay, (1 + num_updates) / (10 + num_updates))` when `num_updates` is
given, all under one "ExponentialMovingAverage" scope grouped into the returned op.
`zero_debias=True` (TensorFlow's bias correction for tensors) is not available.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import core_ops, init_ops, math_ops, state_ops
from flowlab.ops import variable_scope as vs
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.variables import Variable, trainable_variables
from flowlab.train.slot_creator import get_slot_variable

__all__ = ["ExponentialMovingAverage"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def _shadow(primary: Any, initial: Any, name: str) -> Variable:
    """A non-trainable variable "<primary op>/<name>" colocated with `primary`."""
    g = primary.graph
    op = primary.op
    with g.as_default(), g.control_dependencies(None):
        with vs.variable_scope(None, op.name + "/" + name), g.colocate_with(op):
            if callable(initial):
                return get_slot_variable(primary, shape=primary.shape, dtype=primary.dtype.base_dtype,
                                         initializer=initial, trainable=False)
            return get_slot_variable(primary, initializer=initial, trainable=False)


def _initialized_value(var: Variable) -> Tensor:
    from flowlab.ops.cond import cond
    g = var.graph
    with g.as_default(), g.control_dependencies(None), g.device(var.device):
        return cond(state_ops.is_variable_initialized(var), var.read_value, lambda: var.initial_value)


def _assign_moving_average(variable: Variable, value: Any, decay: Tensor) -> Tensor:
    g = variable.graph
    with g.name_scope("AssignMovingAvg") as scope:
        one_minus = convert_to_tensor(1.0 - decay, name="decay")
        if one_minus.dtype != variable.dtype.base_dtype:
            one_minus = math_ops.cast(one_minus, variable.dtype.base_dtype)
        return state_ops.assign_sub(variable, (variable - value) * one_minus, name=scope)


class ExponentialMovingAverage:
    """Maintains moving averages of variables (or tensors) with exponential decay."""

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:
        if zero_debias:
            raise NotImplementedError("flowlab's ExponentialMovingAverage has no zero_debias")
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[Any, Variable] = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list: Any = None) -> Any:
        """Create the shadows (once per variable) and return the op that updates them."""
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if id(var) in self._averages:
                continue
            if isinstance(var, Variable):
                avg = _shadow(var, _initialized_value(var), self._name)
                get_default_graph().add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                avg = _shadow(var, init_ops.zeros_initializer(), self._name)
            self._averages[id(var)] = avg
        g = get_default_graph()
        with g.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=dtypes.float32, name="decay")
            if self._num_updates is not None:
                n = math_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = [_assign_moving_average(self._averages[id(v)], v, decay) for v in var_list]
            return core_ops.group(*updates, name=scope)

    def average(self, var: Any) -> Variable | None:
        """The shadow of `var`, or None if `apply` never saw it."""
        return self._averages.get(id(var))

    def average_name(self, var: Any) -> str:
        """The name of `var`'s shadow (the one `apply` would create if it has none)."""
        if id(var) in self._averages:
            return self._averages[id(var)].name[:-len(":0")]
        return get_default_graph().unique_name(var.name[:-len(":0")] + "/" + self._name, mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Any]:
        """Map of names to restore: each moving-averaged variable from its shadow's name."""
        name_map: dict[str, Any] = {}
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables()
            moving_avg_variables += get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES)
        seen = set()
        for v in moving_avg_variables:
            if id(v) in seen:
                continue
            seen.add(id(v))
            name_map[self.average_name(v)] = v
        for v in get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES):
            if id(v) not in seen and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
