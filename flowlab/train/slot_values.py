"""Slots that start from a given tensor (TensorFlow's `Optimizer._get_or_make_slot`).

Most optimizers make their slots from an initializer ("w/Momentum/Initializer/zeros");
ProximalAdagrad and AdagradDA build a constant first, where `_create_slots` runs (the
root name scope: "Const_2"), and the slot's Assign reads that tensor.  Same variable
names either way ("w/ProximalAdagrad", "w/AdagradDA_1"); only the initial-value ops
differ, and they are kept as TensorFlow names them.
"""

from __future__ import annotations

from typing import Any

from flowlab.ops import constant_op
from flowlab.ops import variable_scope as vs
from flowlab.ops.variables import Variable
from flowlab.train.optimizer import Optimizer, _var_key
from flowlab.train.slot_creator import get_slot_variable

__all__: list[str] = []


def constant_like(var: Variable, value: float) -> Any:
    """`constant(value, shape=var's shape, dtype=var's dtype)`, colocated with `var`."""
    with var.graph.colocate_with(var.op):
        return constant_op.constant(value, shape=var.shape, dtype=var.dtype.base_dtype)


def slot_from_value(opt: Optimizer, var: Variable, val: Any, slot_name: str, op_name: str) -> Variable:
    """The slot `slot_name` of `var`, made once as "<var>/<op_name>" (uniquified)
    initialized from the tensor `val`."""
    named = opt._slot_dict(slot_name)
    key = _var_key(var)
    if key not in named:
        g = var.graph
        with g.as_default(), g.control_dependencies(None):
            with vs.variable_scope(None, var.op.name + "/" + op_name), g.colocate_with(var.op):
                named[key] = get_slot_variable(var, initializer=val, trainable=False,
                                               validate_shape=val.shape.is_fully_defined())
    return named[key]
