"""A task's partitions of a step with loops, as one plan: Send/Recv pairs as hand-offs.

When a while loop spans devices, partitioning (`flowlab.runtime.master.
partition_control_flow`) gives each device its part of the loop plus a control-loop
skeleton, and a `_Send`/`_Recv` pair carries every value and the loop predicate
across, once per iteration.  Run as separate executions, each pair costs a
rendezvous key, a table entry, an asynchronous completion and a frame-path
iteration on each side: 60-200 µs per iteration for a scalar body.

When every partition lives in one task and in host memory, the pairs need none of
that: `colocated_plan(units, pairs, ...)` compiles the partitions together into one
`Plan` in which each pair of the task is a *hand-off*:

* the `_Recv` node reads the `_Send`'s input slot directly and waits for it (its
  producer and the `_Send` become its dependencies); its kernel (`receive`) returns
  the value as it is and counts the transfer on the receiving device, as the real
  `_Recv` does between CPU devices (no copy, `Device.note_transfer`);
* the `_Send` node does nothing (`sent`) and stays for the order it gives.

Every other op keeps its own kernel, device and context, so errors name the op and
its device, traces and step stats name both devices, and a dead value handed off is
dead on the other side (an op with a dead input is dead).  Each device's loop frame
and skeleton share the frame name, so in the combined plan they are one frame whose
iterations run in lock-step: `loop_fusion` compiles it as one function per frame in
which each iteration runs every device's part (the skeleton's Switch reads the
predicate through its hand-off).

Refused, with the reason (`colocated_plan` returns a string): a device outside host
memory (a transfer there copies between memory spaces), a pair whose ends are not
both in the task, or a loop frame that `loop_fusion` cannot fuse -- those steps keep
the partitioned path, which also serves listeners (the events of each Send and Recv).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.registry import DEAD, KernelDef
from flowlab.kernels.resources import VariableState
from flowlab.runtime.task.plan import Plan, compile_plan
from flowlab.runtime.task.registration import ImportedUnit, merged_io

__all__ = ["colocated_plan", "receive", "sent"]


def receive(ctx: Any, value: Any) -> Any:
    """A hand-off's `_Recv`: the sent value itself, the transfer counted (as `_recv`)."""
    if value is not DEAD:
        arr = value.value if type(value) is VariableState else value
        ctx.device.note_transfer(getattr(arr, "nbytes", 0), 0)
    return value


def sent(ctx: Any, value: Any) -> tuple[()]:
    """A hand-off's `_Send`: its Recv reads the value where it is."""
    return ()


def colocated_plan(
    units: list[ImportedUnit],
    pairs: list[dict[str, Any]],
    sequence: list[str] | None,
    num_fetches: int,
    version: int,
) -> tuple[Plan, list[int], list[int]] | str:
    """The units as one plan with every pair a hand-off: (plan, feed index into the
    step's feeds, fetch positions in the step's fetches), or why not."""
    for u in units:
        if u.device.xp is not np:
            return f"{u.device.name} is not in host memory (a transfer would copy)"
    by_name = {op.name: op for u in units for op in u.ops}
    for p in pairs:
        if p["send_op"] not in by_name or p["recv_op"] not in by_name:
            return f"the pair {p['send_op']} -> {p['recv_op']} leaves the task"
    ops = (
        [by_name[n] for n in sequence]
        if sequence is not None
        else [op for u in units for op in u.ops]
    )
    if len(ops) != len(by_name):
        return "the step's sequence does not hold every op of its partitions"
    device_of, feeds, feed_index, present, fetches = merged_io(units, num_fetches)
    plan = compile_plan(ops, device_of, feeds, fetches, version, straight_line=False)
    _hand_off(plan, pairs)
    return plan, feed_index, present


def _hand_off(plan: Plan, pairs: list[dict[str, Any]]) -> None:
    """Turn each pair of `plan` into a hand-off (see the module docstring)."""
    nodes = plan.nodes
    index = {n.op.name: n.index for n in nodes}
    producer = {s: n.index for n in nodes for s in n.outputs if s >= 0}
    for p in pairs:
        send, recv = nodes[index[p["send_op"]]], nodes[index[p["recv_op"]]]
        send.kernel = KernelDef(send.op.type, "CPU", sent)
        recv.kernel = KernelDef(recv.op.type, "CPU", receive)
        recv.inputs = list(send.inputs)
        recv.single_output = True
        waits = [send.index] + [producer[s] for s, _ in send.inputs if s in producer]
        for d in waits:
            if d not in recv.deps:
                recv.deps.append(d)
                nodes[d].consumers.append(recv.index)
        recv.deps.sort()
    plan.initial_pending = tuple(len(n.deps) for n in nodes)
    plan.has_async = any(n.kernel.asynchronous for n in nodes)
    plan._table = None
