"""Buffer forwarding on the straight-line path: which inputs die at which op.

TensorFlow's elementwise kernels call `forward_input_or_allocate_output`: when an
input's buffer has no other reader, the output is written into it instead of a fresh
allocation.  flowlab does the same on the straight-line function of a plan
(flowlab.runtime.task.plan), where the order of the ops is fixed when it is compiled, so
"no later reader" is a static fact about the generated code:

* `last_reads(order, fetch_slots)` -- for each op position, the slots read for the
  last time there (a fetched slot is read again by the `return`).  The generated
  function deletes them after that line, so that a dead value is held by nothing
  (also what frees it as early as possible).
* `forwardable(order, ...)` -- for each node whose kernel declares `forward=(i, ...)`
  (flowlab.kernels.registry), the declared input positions whose slot is read for
  the last time by this node, exactly once, and is not a feed, a fetch, a variable
  read or the output of a constant.  The node then gets a twin context with
  `ctx.forwardable` set to those positions, bound only in the untraced function.

This is the static half.  The kernel adds the dynamic half (`can_forward`: a
writeable array owning its data, held by nothing but the slot -- which excludes every
alias the static half cannot see, e.g. an Identity's output, a view, a value a
kernel stored) and checks the output's shape and dtype.

Switch: `FLOWLAB_FORWARDING=0` in the environment when a plan is compiled turns it
off (no twin contexts; dead slots are still deleted), and with it the deferred,
in-place variable updates (flowlab.runtime.task.deferred_updates).
"""

from __future__ import annotations

import os
from typing import Any


def enabled() -> bool:
    """Whether plans compiled now forward buffers (`FLOWLAB_FORWARDING`, default on)."""
    return os.environ.get("FLOWLAB_FORWARDING", "1") != "0"


def last_reads(order: list[Any], fetch_slots: list[int]) -> list[list[int]]:
    """Per position in `order`, the slots (of plain or variable inputs) that no later
    op reads and that are not fetched, in first-read order."""
    last: dict[int, int] = {}
    for k, node in enumerate(order):
        for slot, _read in node.inputs:
            last[slot] = k
    kept = set(fetch_slots)
    out: list[list[int]] = [[] for _ in order]
    for slot, k in last.items():
        if slot not in kept:
            out[k].append(slot)
    return out


def forwardable(order: list[Any], dying: list[list[int]], feed_slots: list[int],
                fetch_slots: list[int]) -> dict[int, tuple[int, ...]]:
    """{node index: input positions its kernel may write its output into}."""
    if not enabled():
        return {}
    constant_slots = {
        s for n in order if n.constants is not None or n.op.type == "Const" for s in n.outputs
    }
    excluded = set(feed_slots) | set(fetch_slots) | constant_slots
    out: dict[int, tuple[int, ...]] = {}
    for k, node in enumerate(order):
        declared = node.kernel.forward
        if not declared or node.constants is not None:
            continue
        slots = [s for s, _ in node.inputs]
        ok = tuple(
            i for i in declared
            if i < len(node.inputs)
            and not node.inputs[i][1]  # a variable read: the variable's storage
            and node.inputs[i][0] in dying[k]
            and node.inputs[i][0] not in excluded
            and slots.count(node.inputs[i][0]) == 1
        )
        if ok:
            out[node.index] = ok
    return out
