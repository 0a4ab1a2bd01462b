"""Shape memos on the straight-line path: ops computed from shapes alone run once per shape.

A gradient graph computes many small values from the *shapes* of the step's tensors
(the mean's gradient: Shape -> GatherV2 -> Prod -> Cast -> RealDiv, a Tile of the
ones by the shape, a BroadcastGradientArgs of two shapes ...).  With a batch
dimension left unknown they cannot be folded when the plan is compiled (TensorFlow
runs them every step), yet they are the same every step that has the same shapes:
on mlp_train they were 7 kernel calls a step, ~0.2 ms with cold caches.

A *region* is a connected set of such ops: its roots are Shape/Size/Rank/ShapeN ops
of tensors computed in the step; its other members are pure ops (what constant
folding may evaluate, flowlab.runtime.master.optimize) whose data inputs are region values
or constants.  The generated function computes the region's key -- the shapes of the
roots' inputs -- and, when it equals the key of the last run, takes the region's
exported values (those read outside it) from the memo instead of running its lines.
Otherwise it runs them and remembers the exported values (when they are small, and
read-only from then on, so that no kernel forwards its output into one).

A region runs as one block, just before the first op outside it that reads one of
its values; a region that cannot be moved there (it waits for an op that comes later)
or whose value is fetched is left as it was.  The memo holds values that succeeded
only: a region that fails fails on every step, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flowlab.kernels.build_time_folding import NEVER_FOLD as _NEVER_FOLD
from flowlab.kernels.core_kernels import no_op as _no_op_fn

_ROOTS = frozenset({"Shape", "Size", "Rank", "ShapeN"})
# A memo holds its values for the session's life: only small ones (a [batch] vector
# of a shape-derived Tile is small; a Fill of a tensor's shape may not be).
MAX_MEMO_BYTES = 64 * 1024


@dataclass
class Region:
    nodes: list[Any]  # in the order they run
    roots: list[Any]
    exports: list[int] = field(default_factory=list)  # slots read outside the region


def _pure(node: Any) -> bool:
    od = node.op.op_def
    k = node.kernel
    return not (
        od is None or od.is_stateful or od.is_control_flow or node.op.type in _NEVER_FOLD
        or k.fn is _no_op_fn or k.needs_step or k.asynchronous or k.expensive
        or node.num_outputs == 0 or node.constants is not None
        or any(t.dtype.is_ref_dtype or t.dtype.base_dtype.name in ("resource", "variant")
               for t in node.op._outputs)
    )


def regions(order: list[Any], fetch_slots: list[int]) -> tuple[list[Any], list[Region]]:
    """The order with each memoizable region made one contiguous block, and the
    regions (`([], [])`-like `(order, [])` when there is none)."""
    constant_slots = {s for n in order if n.constants is not None or n.op.type == "Const" for s in n.outputs}
    member: dict[int, int] = {}  # node index -> root group (union-find parent)
    producer: dict[int, Any] = {s: n for n in order for s in n.outputs if s >= 0}

    def find(i: int) -> int:
        while member[i] != i:
            member[i] = member[member[i]]
            i = member[i]
        return i

    for n in order:
        if not _pure(n):
            continue
        if n.op.type in _ROOTS:
            if any(read or slot in constant_slots for slot, read in n.inputs):
                continue  # of a variable (its read may fail) or of a constant (folded)
            member[n.index] = n.index
            continue
        ups = []
        for slot, read in n.inputs:
            if slot in constant_slots:
                continue
            p = producer.get(slot)
            if read or p is None or p.index not in member:
                break
            ups.append(p.index)
        else:
            if ups:
                member[n.index] = n.index
                for u in ups:
                    member[find(u)] = find(n.index)
    if not member:
        return order, []
    groups: dict[int, list[Any]] = {}
    for n in order:
        if n.index in member:
            groups.setdefault(find(n.index), []).append(n)
    fetched = set(fetch_slots)
    pos = {n.index: k for k, n in enumerate(order)}
    found: list[Region] = []
    placed: dict[int, Region] = {}  # position of the block -> region
    taken: set[int] = set()
    for nodes in groups.values():
        inside = {n.index for n in nodes}
        slots = {s for n in nodes for s in n.outputs if s >= 0}
        if slots & fetched:
            continue
        # The block runs before the first op outside that waits for it (a data or a
        # control edge): no op moves ahead of one it waits for.
        readers = [m for m in order if m.index not in inside and any(d in inside for d in m.deps)]
        at = min((pos[m.index] for m in readers), default=len(order))
        # Everything the region waits for (data and control) must come before `at`.
        if any(d not in inside and pos.get(d, -1) >= at for n in nodes for d in n.deps):
            continue
        if at in placed:
            continue  # two regions before one reader: keep it simple, leave the second
        exports = sorted({s for m in readers for s, _ in m.inputs if s in slots})
        # The key: the shapes of the region's inputs from outside (a Shape of a value
        # the region computes is a function of the key already).
        roots = [n for n in nodes if n.op.type in _ROOTS
                 and not any(s in slots for s, _ in n.inputs)]
        region = Region(nodes, roots, exports)
        found.append(region)
        placed[at] = region
        taken |= inside
    if not found:
        return order, []
    new: list[Any] = []
    for k, n in enumerate(order):
        if k in placed:
            new.extend(placed[k].nodes)
        if n.index not in taken:
            new.append(n)
    if len(order) in placed:
        new.extend(placed[len(order)].nodes)
    return new, found


def shape_of(v: Any) -> tuple[int, ...]:
    """A value's shape, as the key of a memo (an attribute read for an array)."""
    shape = getattr(v, "shape", None)
    return tuple(np.shape(v)) if shape is None else shape


def store(memo: list[Any], key: Any, values: tuple[Any, ...]) -> None:
    """Remember a region's exported values for `key` when they are small, read-only
    from now on (a kernel then never writes its output into one)."""
    if sum(getattr(v, "nbytes", 0) for v in values) > MAX_MEMO_BYTES:
        memo[0] = None
        return
    for v in values:
        if type(v) is np.ndarray:
            v.flags.writeable = False
    memo[0] = (key, values)  # one assignment: a concurrent step sees a key with its values
