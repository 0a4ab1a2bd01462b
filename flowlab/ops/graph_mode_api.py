"""TensorFlow 1.x's behaviour switches and scope helpers, for flowlab's one mode
(graph mode, control flow v1, reference variables, v1 TensorShapes, tensors compared
by identity):

- the queries answer for that mode: `executing_eagerly_outside_functions`,
  `control_flow_v2_enabled`, `resource_variables_enabled` are False;
- the `disable_*` switches turn off what flowlab never turns on, so they change
  nothing: `disable_control_flow_v2`, `disable_resource_variables`,
  `disable_tensor_equality`, `disable_v2_tensorshape`;
- `init_scope` (no control dependencies; there are no function graphs to leave),
  `op_scope` / `variable_op_scope` (TensorFlow's deprecated argument orders of
  name_scope / variable_scope).

The matching `enable_*` switches are not here: flowlab has no such mode to enable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from flowlab.graph.graph import get_default_graph

__all__ = ["executing_eagerly_outside_functions", "control_flow_v2_enabled", "resource_variables_enabled",
           "disable_control_flow_v2", "disable_resource_variables", "disable_tensor_equality",
           "disable_v2_tensorshape", "init_scope", "op_scope", "variable_op_scope"]


def executing_eagerly_outside_functions() -> bool:
    """False: ops outside functions build a graph."""
    return False


def control_flow_v2_enabled() -> bool:
    """False: tf.cond / tf.while_loop build Switch / Merge / Enter / Exit ops."""
    return False


def resource_variables_enabled() -> bool:
    """False: tf.Variable makes reference variables."""
    return False


def disable_control_flow_v2() -> None:
    """Nothing to change: control flow v1 is flowlab's only control flow."""


def disable_resource_variables() -> None:
    """Nothing to change: variables are reference variables unless asked otherwise."""


def disable_tensor_equality() -> None:
    """Nothing to change: tensors compare (and hash) by identity."""


def disable_v2_tensorshape() -> None:
    """Nothing to change: TensorShape dims are Dimension objects, as in TensorFlow 1.x."""


@contextlib.contextmanager
def init_scope() -> Iterator[None]:
    """Build the block's ops with no control dependencies (TensorFlow also leaves
    function graphs, which flowlab does not have)."""
    with get_default_graph().control_dependencies(None):
        yield


def op_scope(values: Any, name: str | None, default_name: str | None = None) -> Any:
    """Deprecated `name_scope(name, default_name, values)`."""
    return get_default_graph().name_scope(name if name is not None else default_name)


def variable_op_scope(values: Any, name_or_scope: Any, default_name: str | None = None, initializer: Any = None,
                      regularizer: Any = None, caching_device: Any = None, partitioner: Any = None,
                      custom_getter: Any = None, reuse: Any = None, dtype: Any = None,
                      use_resource: Any = None, constraint: Any = None) -> Any:
    """Deprecated `variable_scope(name_or_scope, default_name, values, ...)`."""
    from flowlab.ops.variable_scope import variable_scope

    return variable_scope(name_or_scope, default_name=default_name, values=values, initializer=initializer,
                          regularizer=regularizer, caching_device=caching_device, partitioner=partitioner,
                          custom_getter=custom_getter, reuse=reuse, dtype=dtype, use_resource=use_resource,
                          constraint=constraint)

