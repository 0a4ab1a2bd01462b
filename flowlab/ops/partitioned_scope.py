"""`tf.create_partitioned_variables`: shards made through the current variable scope.

TensorFlow's older spelling of `get_variable(..., partitioner=)`: the variable is
named by a `variable_scope(name, "PartitionedVariable")` (the scope's name is the
variable's), the `slicing` is the partitioner, and the result is the shard list.
It takes TensorFlow's private path (`VariableScope._get_partitioned_variable`), so
the scope's defaults apply but a custom getter is refused, with TF's message; the
shards themselves are made by the variable store (flowlab/ops/variable_store.py).
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.ops.partitioned_variables import PartitionedVariable
from flowlab.ops.variable_scope import (
    VariableScope,
    _variable_store,
    get_variable_scope,
    variable_scope,
)
from flowlab.ops.variables import Variable

__all__ = ["create_partitioned_variables"]


def _scope_partitioned_variable(
    scope: VariableScope, name: str | None, shape: Any = None, dtype: Any = None,
    initializer: Any = None, regularizer: Any = None, trainable: bool | None = None,
    collections: Any = None, caching_device: Any = None, partitioner: Any = None,
    validate_shape: bool = True, constraint: Any = None,
) -> PartitionedVariable:
    """A partitioned variable named by `scope` (plus `name` if given), with its
    defaults and reuse; no custom getter."""
    initializer = scope.initializer if initializer is None else initializer
    regularizer = scope.regularizer if regularizer is None else regularizer
    constraint = scope.constraint if constraint is None else constraint
    caching_device = scope.caching_device if caching_device is None else caching_device
    partitioner = scope.partitioner if partitioner is None else partitioner
    dtype = scope.dtype if dtype is None else dtype
    if scope.custom_getter is not None:
        raise ValueError(
            "Private access to _get_partitioned_variable is not allowed when a custom "
            f"getter is set.  Current custom getter: {scope.custom_getter}.  It is likely "
            "that you're using create_partitioned_variables.  If so, consider instead using "
            "get_variable with a non-empty partitioner parameter instead."
        )
    if partitioner is None:
        raise ValueError("No partitioner was specified")
    full_name = "/".join(n for n in (scope.name, name) if n)
    with get_default_graph().name_scope(None):
        return _variable_store()._get_partitioned_variable(
            full_name, partitioner, shape, dtype, initializer, regularizer, scope.reuse,
            trainable, collections, caching_device, validate_shape, constraint,
        )


def create_partitioned_variables(
    shape: Any, slicing: Any, initializer: Any, dtype: Any = dtypes.float32,
    trainable: bool = True, collections: Any = None, name: str | None = None, reuse: Any = None,
) -> list[Variable]:
    """The shards of a variable of `shape` cut as `slicing` says (one count per
    dimension, at most one > 1), `tf.create_partitioned_variables`:

        parts = tf.create_partitioned_variables([10, 4], [2, 1], tf.zeros_initializer())
        [p.name for p in parts]   # ['PartitionedVariable/part_0:0', '.../part_1:0']

    `initializer` is a value of the full shape (sliced) or an initializer (called per
    shard).  Prefer `get_variable(..., partitioner=...)`.
    """
    if len(shape) != len(slicing):
        raise ValueError(
            "The 'shape' and 'slicing' of a partitioned Variable must have the length: "
            f"shape: {shape}, slicing: {slicing}"
        )
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")

    def partitioner(**unused_kwargs: Any) -> Any:
        return slicing

    with variable_scope(name, "PartitionedVariable", reuse=reuse):
        pv = _scope_partitioned_variable(
            get_variable_scope(), None, shape=shape, dtype=dtype, initializer=initializer,
            trainable=trainable, partitioner=partitioner, collections=collections,
        )
        return list(pv)
