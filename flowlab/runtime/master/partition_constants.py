"""TensorFlow's ReplicateConstants pass: a small constant read on several devices is
cloned onto each of them instead of sent.

TensorFlow 2.21 (common_runtime/replicate_constants_pass.cc, after Grappler, before
partitioning) takes every `Const` on a CPU with at most 16 elements, more than one data
consumer, no control consumer, and consumers on more than one device, and replaces it
with one copy per consumer device named `<name>/replicate/_<n>` (`n` counts up over the
step's copies, the devices of one constant in sorted name order); the original goes.
`replicas` decides the same on flowlab's step (the optimization pass's folded
constants count as `Const`s, as Grappler's are); `_Partitioner` then reads each consumer's
input from its device's copy (`Replicas.on`).  Steps with control flow, and a constant
that is fetched or fed, keep the original (nothing replicated)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels.resources import freeze
from flowlab.ops.op_def import get_op_def
from flowlab.runtime.task.device import Device

__all__ = ["Replicas", "replicas"]

MAX_ELEMENTS = 16


class Replicas:
    """The replicated constants of a step: op id -> device name -> the copy's name."""

    def __init__(self, names: dict[int, dict[str, str]]) -> None:
        self.names = names
        self._made: dict[tuple[int, str], Tensor] = {}

    def __contains__(self, op: Operation) -> bool:
        return id(op) in self.names

    def on(self, p: Any, op: Operation, dst: Device, values: list[Any] | None) -> Tensor:
        """The copy of constant `op` on `dst` (made and added to its partition once)."""
        key = (id(op), dst.name)
        t = self._made.get(key)
        if t is None:
            out = op._outputs[0]
            if values is not None:  # folded by the optimization pass
                dt = out.dtype.base_dtype
                value = freeze(np.array(values[0], dtype=object if dt is dtypes.string else dt.as_numpy_dtype))
                attrs: dict[str, Any] = {"value": value, "dtype": dt}
            else:
                attrs = dict(op._attrs)
            c = Operation(
                p.part(dst).graph, "Const", self.names[id(op)][dst.name], [], [out.dtype.base_dtype], attrs,
                dst.name, [], get_op_def("Const"), op._colocation, op._traceback,
            )
            c._outputs[0]._shape = out._shape
            p.add(p.part(dst), c)
            t = self._made[key] = c._outputs[0]
        return t


def _elements(op: Operation, values: list[Any] | None) -> int | None:
    if values is not None:
        return int(np.size(values[0])) if len(values) == 1 else None
    if op.type != "Const":
        return None
    return int(np.size(op._attrs["value"]))


def replicas(
    ops: list[Operation], inputs_of: Callable[[Operation], list[Tensor]], device_of: Mapping[str, Device],
    constants: Mapping[str, list[Any]], noops: set[str], pinned: set[int], taken: set[str],
) -> Replicas:
    """Which constants of the step TensorFlow would replicate, and their copies' names.
    `pinned`: ids of ops that are fetched or fed (kept as they are); `taken`: the step's
    names (a copy's name skips them)."""
    edges: dict[int, list[Device]] = {}  # op id -> consumer device per data edge
    controlled: set[int] = set()
    by_id: dict[int, Operation] = {}
    for op in ops:
        dev = device_of[op.name]
        for c in op._control_inputs:
            controlled.add(id(c))
        for t in inputs_of(op):
            if op.name in noops:  # converted: its inputs became control edges
                controlled.add(id(t.op))
            else:
                edges.setdefault(id(t.op), []).append(dev)
                by_id[id(t.op)] = t.op
    names: dict[int, dict[str, str]] = {}
    counter = 0
    for op in ops:  # in step order, as TensorFlow walks its graph's nodes
        k = id(op)
        devs = edges.get(k, [])
        if len(devs) <= 1 or k in controlled or k in pinned or k not in by_id:
            continue
        n = _elements(op, constants.get(op.name))
        # A consumer off a CPU would read a copy on its host's CPU:0 in TensorFlow: not modelled.
        if n is None or n > MAX_ELEMENTS or any(d.device_type != "CPU" for d in [device_of[op.name], *devs]):
            continue
        on = sorted({d.name for d in devs})
        if len(on) <= 1:
            continue
        names[k] = {}
        for d in on:
            while f"{op.name}/replicate/_{counter}" in taken:
                counter += 1
            names[k][d] = f"{op.name}/replicate/_{counter}"
            taken.add(names[k][d])
            counter += 1
    return Replicas(names)
