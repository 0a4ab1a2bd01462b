"""Deferred variable updates on the straight-line path: the optimizer's write, last.

flowlab never writes a stored array in place while a step runs: a kernel stores a
new array and the step's undo log keeps the old one, so that a step that fails puts
its variables back (flowlab.runtime.task.step).  For a training step this costs memory
traffic that TensorFlow's in-place ref-variable updates do not pay: Adam writes three
new arrays per variable while the three old ones stay alive, ~3-8% of the mlp_train
step (an interleaved A/B against an in-place update, session 5).

A deferred update keeps the guarantee and writes in place.  When an update op's
kernel supports it (`defer=True` in flowlab.kernels.registry) and the straight-line
order allows it (`deferrable` below), its kernel checks its inputs when its turn
comes but only records the update (`step.defer`).  After the last op, the step
commits (`Step.commit`): every update first checks whether its variables hold their
arrays alone -- nothing else (a fetched value, an earlier read still alive, another
step) has them -- and allocates what it needs; then every update writes, in place
where it may, else as new arrays.  A step that fails before the commit has written
nothing; the writes themselves cannot fail.  Concurrent steps on the same variables
may see an update in progress, as with TensorFlow's `use_locking=False`.

An update op is deferrable when its output is read by no op and not fetched, its
variables are VariableV2 ops of the plan, and no later op in the order uses any of
those variables (a read, a write, another update) or a reference of unknown origin.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.runtime.task import forwarding


def deferrable(order: list[Any], fetch_slots: list[int]) -> set[int]:
    """Indices of the nodes of `order` whose kernel may defer its variable update
    (none with `FLOWLAB_FORWARDING=0`, the switch of every in-place write)."""
    if not forwarding.enabled() or not any(n.kernel.defer for n in order):
        return set()
    variable_of: dict[int, tuple[Any, ...]] = {}  # slot -> the variable it holds
    other_refs: set[int] = set()  # slots of references from other ops (unknown variables)
    for n in order:
        if n.op.type == "VariableV2":
            if n.outputs[0] >= 0:
                a = n.op._attrs
                variable_of[n.outputs[0]] = (n.ctx.device.name, a["container"], a["shared_name"] or n.op.name)
            continue
        other_refs.update(s for s, t in zip(n.outputs, n.op.outputs) if s >= 0 and t.dtype.is_ref_dtype)
    fetched = set(fetch_slots)
    out: set[int] = set()
    for k, n in enumerate(order):
        if not n.kernel.defer or n.ctx.xp is not np or any(s >= 0 for s in n.outputs):
            continue
        refs = [slot for slot, read in n.inputs if not read and (slot in variable_of or slot in other_refs)]
        if not refs or any(s not in variable_of for s in refs):
            continue
        mine = {variable_of[s] for s in refs}
        if any(variable_of.get(s) in mine or s in other_refs for s in fetched):
            continue
        if all(_leaves_alone(m, mine, variable_of, other_refs) for m in order[k + 1:]):
            out.add(n.index)
    return out


def _leaves_alone(node: Any, mine: set[tuple[Any, ...]], variable_of: dict[int, tuple[Any, ...]],
                  other_refs: set[int]) -> bool:
    """Whether `node` uses none of the variables `mine` (nor a reference it cannot name)."""
    for slot, _read in node.inputs:
        if variable_of.get(slot) in mine or slot in other_refs:
            return False
    return True
