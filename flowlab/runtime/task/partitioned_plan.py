"""A task's compiled partitions of one step signature, and one step of them.

`compile_units` takes the units of a registration as the task imported them
(flowlab.runtime.task.registration) and compiles them:

* one unit: a plain `Plan`, with its generated straight-line function when every
  kernel allows one (the single-device fast path);
* several: a `PartitionedPlan`, one dataflow `Plan` per partition, plus -- when
  every kernel is plain apart from the partitioner's own Recvs and nothing is control
  flow -- `fused`, all partitions as one straight-line `Plan` in the registration's
  `sequence`, where each `_Send` runs before its `_Recv`: the transfers still go
  through the step's rendezvous table, but no Recv ever waits, so unwatched steps run
  that way (a pair then costs two kernel calls; see docs/notes/partitioning.md);
* with loops instead, `colocated`: all partitions as one plan with every pair a
  hand-off (`flowlab.runtime.task.handoffs`), kept when each of its loops fuses
  (`loop_fusion`), so that a loop across the task's devices runs as one generated
  function per frame; `colocated_reason` says why a plan with loops has none.

`run_partitioned` runs one step of a `PartitionedPlan`: with loop fusion on, the
colocated plan as one `Execution` when there is one (watched, on the frame path
with each op's events; unwatched, its loops fused); otherwise every
partition an `Execution` of the same `Step` (one cancellation, one undo log, one
rendezvous table), driven together on the calling thread.

Invariant: a compiled plan is read-only and shared by concurrent steps.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

from flowlab import errors
from flowlab.runtime.task import loop_fusion
from flowlab.runtime.task.device import Device, value_bytes
from flowlab.runtime.task.executor import Execution, Listener, run_executions
from flowlab.runtime.task.frame_analysis import analyze
from flowlab.runtime.task.handoffs import colocated_plan
from flowlab.runtime.task.plan import Plan, compile_plan, generate_straight_line
from flowlab.runtime.task.registration import ImportedUnit, merged_io

__all__ = ["CompiledPartition", "PartitionedPlan", "compile_units", "run_partitioned"]

_RECV_TYPES = frozenset({"_Recv", "_HostRecv"})


@dataclass
class CompiledPartition:
    """One partition of a task: its device, its Plan, where its feeds come from in
    the step's feed list and where its fetches go in the step's fetch list."""

    device: Device
    plan: Plan
    feed_index: list[int]
    fetch_index: list[int]
    unit: ImportedUnit


@dataclass
class PartitionedPlan:
    """A step signature compiled per partition on one task (see the module docstring)."""

    graph_version: int
    partitions: list[CompiledPartition]
    pairs: list[dict[str, Any]]  # {"send_op", "recv_op", "key"} of the task's own pairs
    num_fetches: int
    fused: Plan | None = None
    # The fused plan reads its feeds in this order from the step's feed list.
    fused_feed_index: list[int] = field(default_factory=list)
    num_expensive: int = 0
    # What a runner asks any plan: never straight-line itself, may wait.
    straight_line: Any = None
    has_async: bool = True
    # Set by an in-process master, for inspection only (pictures, RunMetadata, the
    # Stepper): the step as placed and the master's partitions.  Never read to run.
    placement: Any = None
    optimization: Any = None
    ops: list[Any] = field(default_factory=list)
    fed_fetches: list[tuple[int, int]] = field(default_factory=list)
    master_partitions: Any = None  # the master's PartitionedGraph
    colocated: Plan | None = None
    colocated_feed_index: list[int] = field(default_factory=list)
    colocated_fetch_positions: list[int] = field(default_factory=list)
    colocated_reason: str = ""


def compile_units(units: list[ImportedUnit], graph_version: int, num_fetches: int,
                  pairs: list[dict[str, Any]], sequence: list[str] | None,
                  with_peers: bool = False) -> Plan | PartitionedPlan:
    """Compile a registration's imported units (see the module docstring).
    `with_peers`: some transfer crosses to another task, so the step needs its
    rendezvous table even with one unit (and is never fused)."""
    if len(units) == 1 and not pairs and not with_peers:
        u = units[0]
        plan = compile_plan(u.ops, u.device_of, u.feeds, u.fetches, graph_version)
        plan.unit = u  # type: ignore[attr-defined]
        return plan
    parts = [
        CompiledPartition(
            u.device, compile_plan(u.ops, u.device_of, u.feeds, u.fetches, graph_version, straight_line=False),
            u.feed_index, u.fetch_index, u,
        )
        for u in units
    ]
    plans = [p.plan for p in parts]
    pplan = PartitionedPlan(graph_version, parts, pairs, num_fetches,
                            num_expensive=sum(p.num_expensive for p in plans))
    ours = {pair["recv_op"] for pair in pairs}
    plain = sequence is not None and not any(p.has_control_flow for p in plans) and all(
        not n.kernel.asynchronous or (n.op.type in _RECV_TYPES and n.op.name in ours)
        for p in plans for n in p.nodes
    )
    if plain and not with_peers:
        _fuse(pplan, units, sequence, graph_version)  # type: ignore[arg-type]
    elif any(p.has_control_flow for p in plans) and not with_peers:
        _colocate(pplan, units, sequence, graph_version)
    return pplan


def _colocate(pplan: PartitionedPlan, units: list[ImportedUnit], sequence: list[str] | None,
              version: int) -> None:
    """All partitions as one plan of hand-offs, kept when every loop in it fuses."""
    got = colocated_plan(units, pplan.pairs, sequence, pplan.num_fetches, version)
    if isinstance(got, str):
        pplan.colocated_reason = got
        return
    plan, feed_index, fetch_positions = got
    try:
        why = loop_fusion.why_not_fused(analyze(plan))
    except errors.OpError as e:  # frames the analysis refuses: the partitioned path's to report
        why = e.message
    if why is not None:
        pplan.colocated_reason = why
        return
    pplan.colocated, pplan.colocated_feed_index, pplan.colocated_fetch_positions = plan, feed_index, fetch_positions


def _fuse(pplan: PartitionedPlan, units: list[ImportedUnit], sequence: list[str], version: int) -> None:
    """All partitions as one straight-line Plan in `sequence` (each Send before its Recv)."""
    by_name = {op.name: op for u in units for op in u.ops}
    ops = [by_name[n] for n in sequence]
    device_of, feeds, pplan.fused_feed_index, present, fetches = merged_io(units, pplan.num_fetches)
    # In the fused plan each Recv depends on its Send (a control edge for the
    # compilation only; the partitions' Recvs have no inputs, as TensorFlow's).
    recvs = [(by_name[p["recv_op"]], by_name[p["send_op"]]) for p in pplan.pairs]
    for recv, send in recvs:
        recv._control_inputs = [send]
    try:
        fused = compile_plan(ops, device_of, feeds, fetches, version, straight_line=False)
    finally:
        for recv, _ in recvs:
            recv._control_inputs = []
    generate_straight_line(fused)
    fused.fetch_positions = present  # type: ignore[attr-defined]
    pplan.fused = fused


def run_partitioned(
    pplan: PartitionedPlan,
    step: Any,
    feed_values: list[Any],
    listener: Listener | None = None,
    pool: Any = None,
    deadline: float | None = None,
) -> list[Any]:
    """Run one step: every partition an `Execution` of `step`.  The caller gives the
    step its rendezvous table (`step.rendezvous`) and drops it afterwards.  Returns
    the values of the fetches this task produces, in the step's fetch positions (None
    where another task or a feed answers)."""
    colocated = pplan.colocated
    if colocated is not None and loop_fusion.ENABLED:
        # Watched, the same plan on the frame path: each op's events, hand-offs' too
        # (a `_Send` and its `_Recv` keep their names and devices).
        vals = Execution(colocated, step, [feed_values[j] for j in pplan.colocated_feed_index], listener, pool,
                         deadline).run()
        fetched: list[Any] = [None] * pplan.num_fetches
        for i, v in zip(pplan.colocated_fetch_positions, vals):
            fetched[i] = v
        return fetched
    shared: queue.SimpleQueue[Any] = queue.SimpleQueue()
    execs = [
        Execution(part.plan, step, [feed_values[j] for j in part.feed_index], listener, pool, deadline,
                  completions=shared)
        for part in pplan.partitions
    ]
    results = run_executions(execs)
    out: list[Any] = [None] * pplan.num_fetches
    for part, ex, vals in zip(pplan.partitions, execs, results):
        values = getattr(ex, "values", None)  # a loop's frame execution keeps values per iteration
        if values is not None:
            part.device.note_step_bytes(value_bytes(values))
        for i, v in zip(part.fetch_index, vals):
            out[i] = v
    return out

