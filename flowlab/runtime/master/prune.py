"""Prune: the ops a step needs (paper section 3.2, partial execution).

Walk back from the fetched tensors and target ops through data and control inputs,
cutting at fed tensors (any tensor can be fed; its producer is still run when some
*other* of its outputs is needed).  An op all of whose outputs are fed is not run for
a control edge either: the edge is satisfied by the feed, as in TensorFlow.  The result is in a topological order; a cycle
outside the loop machinery is an error naming an op on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flowlab import errors
from flowlab.graph.tensor import Operation, Tensor

# Edges into these ops may close a cycle (the back edge of a while loop).
_BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})


def prune(
    fetches: Iterable[Tensor], targets: Iterable[Operation], feeds: Iterable[Tensor]
) -> list[Operation]:
    """The ops needed to compute `fetches` and run `targets`, inputs first."""
    fed = {id(t) for t in feeds}
    needed: dict[int, Operation] = {}
    stack: list[Operation] = []
    for t in fetches:
        if id(t) not in fed:
            stack.append(t.op)
    stack.extend(targets)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed[id(op)] = op
        for t in op._inputs:
            if id(t) not in fed and id(t.op) not in needed:
                stack.append(t.op)
        for c in op._control_inputs:
            # A control input whose every output is fed has "run" once the feed
            # arrives (TensorFlow moves its control edges to the feed).
            if id(c) not in needed and not _all_fed(c, fed):
                stack.append(c)
    return topological_order(list(needed.values()), fed)


def _all_fed(op: Operation, fed: set[int]) -> bool:
    return bool(op._outputs) and all(id(t) in fed for t in op._outputs)


def topological_order(ops: list[Operation], fed: set[int] | None = None) -> list[Operation]:
    """Kahn's algorithm over `ops`, ties broken by creation order (stable plans)."""
    fed = fed or set()
    members = {id(op) for op in ops}
    ops = sorted(ops, key=lambda o: o._id)
    pending: dict[int, int] = {}
    consumers: dict[int, list[Operation]] = {id(op): [] for op in ops}
    for op in ops:
        n = 0
        if op.type not in _BACK_EDGE_OPS:
            deps = {id(t.op) for t in op._inputs if id(t) not in fed and id(t.op) in members}
            deps |= {id(c) for c in op._control_inputs if id(c) in members}
            deps.discard(id(op))
            for d in deps:
                consumers[d].append(op)
            n = len(deps)
        pending[id(op)] = n
    import heapq

    ready = [(op._id, i, op) for i, op in enumerate(ops) if pending[id(op)] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, _, op = heapq.heappop(ready)
        order.append(op)
        for c in consumers[id(op)]:
            pending[id(c)] -= 1
            if pending[id(c)] == 0:
                heapq.heappush(ready, (c._id, len(order), c))
    if len(order) != len(ops):
        stuck = [op.name for op in ops if pending[id(op)] > 0]
        raise errors.InvalidArgumentError(
            None, None,
            f"The graph has a cycle through op '{stuck[0]}' (and {len(stuck) - 1} more); "
            "only while loops (NextIteration) may form cycles.",
        )
    return order


def check_outside_loops(feeds: list[Tensor], fetches: list[Tensor], targets: list[Any]) -> None:
    """A tensor made inside a while loop's body has one value per iteration: it may
    be neither fed nor fetched (as TensorFlow, which marks it so; its ValueErrors)."""
    from flowlab.ops.control_flow_context import loop_of, output_context

    for t in feeds:
        if loop_of(output_context(t.op)) is not None:
            raise ValueError(f"Tensor {t.name} may not be fed.")
    for op in [t.op for t in fetches] + list(targets):
        if loop_of(output_context(op)) is not None:
            raise ValueError(
                f"Operation {op.name} has been marked as not fetchable. Typically this happens "
                "when it is defined in another function or code block. Use return values, "
                "explicit Python locals or TensorFlow collections to access it."
            )
