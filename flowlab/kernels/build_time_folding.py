"""Build-time constant folding through the kernels: installs the runner that
`flowlab.ops.array_shapes` uses to evaluate an op on statically known inputs (shape
inference of `reshape(x, tf.shape(y))`, `tf.concat` of constant shapes, ...).

The ops layer cannot import the kernels (the layer contract), so it keeps a hook and
this module fills it when the kernels are imported.  Only CPU kernels that need no
step (no resources, no rendezvous) run here, on NumPy, with a stand-in context.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation
from flowlab.kernels.registry import find_kernel
from flowlab.ops import array_shapes

CONTROL_FLOW_OPS = frozenset({
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger",
})
# Stateless in their declarations, but not values of their inputs alone: never folded
# by the master's optimization pass, never memoized by a task's shape memos.
NEVER_FOLD = frozenset({
    "Const", "Placeholder", "PlaceholderWithDefault", "NoOp", "ReadFile", "MatchingFiles",
}) | CONTROL_FLOW_OPS


class _Known:
    """A stand-in NodeContext for running a CPU kernel on statically known inputs."""

    def __init__(self, op: Operation) -> None:
        self.op, self.name, self.op_type, self.attrs, self.xp = op, op.name, op.type, op._attrs, np


def run_cpu_kernel(op: Operation, values: list[Any]) -> Any:
    """`op`'s outputs from its CPU kernel on `values`, or None when it has none that can
    run outside a step."""
    k = find_kernel(op.type, "CPU")
    if k is None or k.needs_step:
        return None
    out = k.fn(_Known(op), *values)
    if isinstance(out, (list, tuple)):
        return [np.asarray(o) for o in out]
    return np.asarray(out)


array_shapes.set_kernel_runner(run_cpu_kernel)
