"""What a step tells its listeners: `ExecEvent`s (one per op start, end, death or
error, and frame entries/exits), or, for a listener that takes records, one
`StepRecords` per step run by the traced straight-line function (and `LoopRecords`
for the fused loops in a step with loops).  The executor
(`flowlab.runtime.task.executor`), the frame path and the profiler share these types;
`chain_listeners` joins several listeners into one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flowlab.runtime.task.plan import PlanNode


@dataclass(slots=True)
class ExecEvent:
    """One thing that happened in a step.  kind: op_start, op_end, op_dead, error (and
    frame_enter/frame_exit on the frame path).  `info`: the outputs (a sequence, one
    per output) for op_end, the error for error.  `op`: the Operation itself (None for
    frame events), so that a listener needs no lookup by name."""

    kind: str
    step_id: int
    node: str
    op_type: str
    device: str
    time_us: float
    thread: int
    info: Any = None
    frame: str = ""  # the frame path ("" for the root frame), e.g. "while/while_context"
    iteration: int = 0  # the iteration within that frame
    op: Any = None  # the Operation (None for frame events)


Listener = Callable[[ExecEvent], None]


@dataclass(slots=True)
class StepRecords:
    """A step run by the traced straight-line function (`Plan.traced_line()`), handed
    whole, after the step, to a listener that takes records: one with a
    `take_records(records)` attribute (`StepStatsCollector.listen` has one).  Such a
    listener gets this instead of the two events per op it would get otherwise, unless
    its `take_records.whole_steps` is False: then it takes loop records only and gets
    the events of a straight-line step as they happen (a task server streams them).

    Op k of `nodes` ran from `times_ns[k]` to `times_ns[k + 1]` (`perf_counter_ns`) on
    `thread`; its outputs are `outputs[out_start[k]:out_start[k + 1]]` -- a taker must
    not keep them (they are dropped after the takers ran).  The first `ran` ops
    finished; when the step failed, op `ran` raised `error` (located) at `error_ns`."""

    step_id: int
    thread: int
    nodes: list[PlanNode]
    times_ns: list[int]
    out_start: list[int]
    ran: int
    outputs: Any = None
    error: Any = None
    error_ns: int = 0


@dataclass(slots=True)
class LoopRecords:
    """Iterations of a fused loop run by its recording twin (`loop_fusion.recording_twin`),
    handed to a listener that takes records (`take_records`, as `StepRecords` are) in
    batches while the loop runs, the last one when it ends.  The rest of the step
    reaches the same listener as events.

    `rows[r]` is iteration `first + r` of the loop instance, laid out as `layout`
    (`loop_fusion.LoopLayout`) says: clock reads, the outputs of each op, dead flags.  In
    the batch with `final`, the last row is the iteration whose predicate was false (or,
    with `partial`, none: the loop failed, and `partial` is `(ran, times, values)` of the
    iteration that failed, its first `ran` cols of `layout.full` having run); the Exits
    gave `exits` at `end_ns`.  A taker must not keep the rows' values (they are dropped
    after the takers ran)."""

    step_id: int
    thread: int
    layout: Any
    first: int
    rows: list[tuple[Any, ...]]
    final: bool = False
    end_ns: int = 0
    exits: Any = None
    partial: Any = None


def chain_listeners(*listeners: Listener | None) -> Listener | None:
    """One listener calling each of `listeners` (Nones dropped) in order; None if none
    is left, the listener itself if one is.  When every one takes records, so does
    the chain."""
    ls = tuple(x for x in listeners if x is not None)
    if not ls:
        return None
    if len(ls) == 1:
        return ls[0]
    if len(ls) == 2:
        a, b = ls

        def both(ev: ExecEvent) -> None:
            a(ev)
            b(ev)

        chained: Listener = both
    else:
        def each(ev: ExecEvent) -> None:
            for f in ls:
                f(ev)

        chained = each
    takers = [getattr(f, "take_records", None) for f in ls]
    if all(t is not None for t in takers):
        def take_records(rec: StepRecords) -> None:
            for t in takers:
                t(rec)  # type: ignore[misc]

        # Whole steps only if every taker wants them (see StepRecords).
        take_records.whole_steps = all(getattr(t, "whole_steps", True) for t in takers)  # type: ignore[attr-defined]
        chained.take_records = take_records  # type: ignore[attr-defined]
    return chained


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0
