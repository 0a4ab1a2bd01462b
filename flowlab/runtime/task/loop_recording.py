"""Traced and watched steps keep their fused loops: the recorder of a recording twin
and the frame execution that runs the twins.

`loop_fusion.recording_twin` generates, beside a fused loop's function, its twin: the
same lines, every output named, a clock read after each kernel call, and one row per
iteration appended to the `LoopRecorder` it is given.  `recording_class()` is the
`FrameExecution` the executor picks when every listener of a step takes records (the
StepStats collector, the live bridge): it decides fusion as an unwatched step would,
then runs each fused loop's twin; ops outside the loops publish their events as on the
frame path.  The recorder hands rows to the listener as `events.LoopRecords` every 32
iterations and at the end, so a long loop holds at most that many iterations' values,
and clears them once taken (no value outlives the step).  `TRACED_RUNS` counts the
loop instances a twin ran, so tests can tell a traced step stayed fused without timing
it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from flowlab.kernels.registry import DEAD
from flowlab.runtime.task.events import LoopRecords
from flowlab.runtime.task.frame_analysis import _Entry
from flowlab.runtime.task.loop_fusion import FusedLoop, LoopLayout, recording_twin

__all__ = ["TRACED_RUNS", "LoopRecorder", "recording_class"]

class LoopRecorder:
    """Where one instance of a recording twin puts its rows (`P` in the twin): they go
    to `take` (a listener's `take_records`) as `LoopRecords`, every 32 iterations and
    at the end, so that a long loop holds no more than that many iterations' values."""

    __slots__ = ("layout", "take", "step_id", "thread", "rows", "first")

    def __init__(self, layout: LoopLayout, take: Any, step_id: int, thread: int) -> None:
        self.layout = layout
        self.take = take
        self.step_id = step_id
        self.thread = thread
        self.rows: list[tuple[Any, ...]] = []
        self.first = 0

    def _send(self, final: bool, exits: Any = None, partial: Any = None) -> None:
        rows = self.rows.copy()  # the twin holds `rows.append`: the list itself stays
        self.rows.clear()
        rec = LoopRecords(self.step_id, self.thread, self.layout, self.first, rows, final,
                          time.perf_counter_ns(), exits, partial)
        self.first += len(rows)
        try:
            self.take(rec)
        finally:
            rec.rows, rec.exits, rec.partial = [], None, None  # no value outlives the step

    def flush(self) -> None:
        if self.rows:
            self._send(False)

    def end(self, exits: tuple[Any, ...]) -> None:
        self._send(True, exits)

    def inner(self, k: int, n: int) -> LoopRecorder:
        """The recorder of inner loop `k`'s instance in this loop's iteration `n`."""
        lay = self.layout.inner[k].layout
        assert lay is not None
        return LoopRecorder(lay, self.take, self.step_id, self.thread)

    def failed(self, n: int, names: dict[str, Any], exc: BaseException) -> None:
        """The twin raised in iteration `n`: the rows so far, and what ran of that one
        (the cols of `layout.full` before the failing line, read from its `names`)."""
        lay = self.layout
        tb = exc.__traceback__
        ran = None
        while tb is not None:
            if tb.tb_frame.f_code is lay.code:
                ran = lay.line_to_pos.get(tb.tb_lineno)
            tb = tb.tb_next
        partial = None
        from flowlab.runtime.task.frames import _Stop

        if ran is not None and not isinstance(exc, _Stop):  # a stop is the step's failure, elsewhere
            row = []
            for x in lay.exprs:  # names this iteration did not reach are not read (cols < ran)
                try:
                    row.append(eval(x, lay.ns, names))  # noqa: S307 - our own generated names
                except Exception:  # noqa: BLE001 - a name not assigned yet
                    row.append(DEAD)
            partial = (min(ran, len(lay.full)), tuple(row))
        self._send(True, None, partial)


TRACED_RUNS = [0]  # loop instances run by a recording twin (tests read it: no timing)


def recording_class() -> Any:
    """The `FrameExecution` for a step whose every listener takes records: fusible
    loops run their recording twins (`LoopRecords` to the listener), the rest of the
    step publishes its events as on the frame path."""
    cls = _RECORDING[0]
    if cls is None:
        cls = _RECORDING[0] = _recording_class()
    return cls


_RECORDING: list[Any] = [None]


def _recording_class() -> Any:
    from flowlab.runtime.task import frames

    class RecordingFrameExecution(frames.FrameExecution):
        """Watched by listeners that take records: the fused path stays (see
        `recording_execution`)."""

        def _child(self, e: _Entry, it: Any, dead: bool = False) -> Any:
            # The frame path fuses only unwatched steps: decide as if unwatched; an
            # instance that runs fused records itself, one that does not is announced.
            children = it.children
            new = children is None or e.out_info.name not in children
            listener, self.listener = self.listener, None
            try:
                child = super()._child(e, it, dead)
            finally:
                self.listener = listener
            if new and child.fused is None and listener is not None:
                listener(self._fevent("frame_enter", e, child.iterations[0]))
            return child

        def _unfuse(self, frame: Any) -> None:
            # To the general path after all (a dead Enter, a stall): announced there.
            arrived = frame.arrived[:1]
            super()._unfuse(frame)
            if self.listener is not None and arrived:
                self.listener(self._fevent("frame_enter", arrived[0][0], frame.iterations[0]))

        def _run_fused(self, frame: Any) -> None:
            fz = frame.fused
            take = getattr(self.listener, "take_records", None)
            if take is None:
                super()._run_fused(frame)
                return
            tw = recording_twin(fz)
            lay = tw.layout
            assert lay is not None
            rec = LoopRecorder(lay, take, self.step.step_id, threading.get_ident())
            twin_fn = tw.fn

            def fn(step: Any, fid: str, chk: Any, *enters: Any) -> Any:
                return twin_fn(step, fid, chk, rec, *enters)

            frame.fused = _Bound(fz, fn, tw.codes)
            TRACED_RUNS[0] += 1
            super()._run_fused(frame)

    return RecordingFrameExecution


class _Bound:
    """A fused loop as `FrameExecution._run_fused` calls it, running a recording twin."""

    __slots__ = ("fn", "enter_pos", "exits", "ops_cond", "ops_body", "codes", "num_expensive")

    def __init__(self, fz: FusedLoop, fn: Any, codes: dict[Any, dict[int, _Entry]]) -> None:
        self.fn = fn
        self.enter_pos, self.exits = fz.enter_pos, fz.exits
        self.ops_cond, self.ops_body, self.num_expensive = fz.ops_cond, fz.ops_body, fz.num_expensive
        self.codes = codes

    entry_for = FusedLoop.entry_for
