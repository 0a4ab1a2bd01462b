"""TensorFlow 1.x's resources helpers (tensorflow/python/ops/resources.py), as the
Scaffold uses them: the resources of the graph's RESOURCES (shared) and
LOCAL_RESOURCES collections, an op creating them, and a report of the uninitialized
ones.  A resource entry is an object with `handle`, `create` and `is_initialized`
(TensorFlow's `_Resource`); ordinary TF1 programs leave both collections empty, and then
the ops are TensorFlow's degenerate ones (a NoOp "init", an empty string Const).
"""

from __future__ import annotations

import os
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph

__all__ = ["shared_resources", "local_resources", "initialize_resources", "report_uninitialized_resources"]

RESOURCES = "resources"
LOCAL_RESOURCES = "local_resources"


def shared_resources() -> list[Any]:
    """Resources visible to all tasks in the cluster."""
    return get_default_graph().get_collection(RESOURCES)


def local_resources() -> list[Any]:
    """Resources local to this session."""
    return get_default_graph().get_collection(LOCAL_RESOURCES)


def initialize_resources(resource_list: list[Any], name: str = "init") -> Any:
    """An op creating each resource (a NoOp named `name` when there are none)."""
    from flowlab.ops.core_ops import group, no_op

    if resource_list:
        return group(*[r.create for r in resource_list], name=name)
    return no_op(name=name)


def report_uninitialized_resources(resource_list: list[Any] | None = None,
                                   name: str = "report_uninitialized_resources") -> Any:
    """A 1-D string tensor of the names of the uninitialized resources, on the CPU (or
    TF_DEVICE_FOR_UNINITIALIZED_VARIABLE_REPORTING) as TensorFlow places it."""
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.constant_op import constant

    if resource_list is None:
        resource_list = shared_resources() + local_resources()
    g = get_default_graph()
    with g.name_scope(name), g.device(os.environ.get("TF_DEVICE_FOR_UNINITIALIZED_VARIABLE_REPORTING", "/cpu:0")):
        if not resource_list:
            return constant([], dtype=dtypes.string)
        mask = math_ops.logical_not(array_ops.stack([r.is_initialized for r in resource_list]))
        names = constant([r.handle.name for r in resource_list])
        return array_ops.boolean_mask(names, mask)
