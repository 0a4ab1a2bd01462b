"""A traced or watched step's events, from a task on another process to the client.

On the task, `EventRecorder` is the step's listener: per ExecEvent it keeps a plain
row -- kind, node, op type, device, time, thread, frame, iteration, and for an
op_end only what the outputs were (shape, dtype, bytes, whether a variable's
storage), for an error its text -- never the arrays.  The rows travel in the
`run_step` reply ("events").  It also takes loop records (`take_records`, with
`whole_steps` False), so a watched step on a task keeps its fused loops, as a local one
does: each runs its recording twin and hands `LoopRecords` every 32 iterations.  They
are kept as compact as the StepStats collector keeps them and become the rows of the
events the frame path would have published when taken.  Straight-line steps still
publish each op's events, so the client sees a step's ops while it runs, even one that
waits on a queue.

On the client, `replay` turns the rows back into ExecEvents for the session's
listeners (the profiler's StepStatsCollector, the live views), with each task's
times moved onto the client's clock (`clock_offset_us`: none on the same machine,
else estimated from a status call, the task's clock read between the client's send
and receive, NTP-style), so the timelines of all tasks merge into one.  While a watched step runs, the client
asks each task for the rows recorded so far every `STREAM_S` (`step_events`), so
listeners -- the live views -- see a long step as it runs; the rest come with the
reply.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.sendrecv_kernels import DEAD
from flowlab.runtime.client.step_stats import StepStatsCollector, _expand
from flowlab.runtime.client.step_stats import _describe as describe_outputs
from flowlab.runtime.task.events import ExecEvent

__all__ = ["EventRecorder", "Outputs", "boot_id", "clock_offset_us", "now_us", "replay"]


def now_us() -> float:
    """The clock events are stamped with (the executor's: perf_counter, in µs)."""
    return time.perf_counter_ns() / 1000.0


def _plain(descs: Any) -> list[Any]:
    """Output descriptions (step_stats._describe's) as plain data, dtypes by name."""
    return [None if d is None else [list(d[0]), None if d[1] is None else str(d[1]), int(d[2]), bool(d[3])]
            for d in descs]


class EventRecorder:
    """A listener keeping plain rows (see the module docstring)."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self._taken = 0
        # Whole-step and loop records, compact until taken (the executor's thread
        # appends them while the loop takes).
        self._records = StepStatsCollector()
        collect = self._records.listen.take_records  # type: ignore[attr-defined]

        def take_records(rec: Any) -> None:
            collect(rec)

        # Loops only: a straight-line step's records come at its end, and the client
        # streams a watched step's ops while it runs (a step may wait on a queue).
        take_records.whole_steps = False  # type: ignore[attr-defined]
        self.take_records = take_records

    def take(self) -> list[list[Any]]:
        """The rows recorded since the last take (the step's thread appends while the
        loop takes: a list's append and slice are each atomic)."""
        self._expand_records()
        end = len(self.rows)
        out, self._taken = self.rows[self._taken:end], end
        return out

    def _expand_records(self) -> None:
        records = self._records.events
        end = len(records)
        if not end:
            return
        batch = records[:end]
        del records[:end]  # one operation: an append racing it lands after `end`
        for kind, _, node, op_type, device, t, thread, frame, it, info, _ in _expand(batch):
            if kind == "op_end" and info is not None:
                info = _plain(info)
            self.rows.append([kind, node, op_type, device, float(t), int(thread) & 0xFFFFFFFF, frame, int(it), info])

    def __call__(self, ev: ExecEvent) -> None:
        info: Any = None
        if ev.kind == "op_end" and ev.info is not None:
            info = _plain(describe_outputs(ev.info))  # what the profiler records of outputs
        elif ev.kind == "error":
            info = str(getattr(ev.info, "message", ev.info))
        self.rows.append([ev.kind, ev.node, ev.op_type, ev.device, float(ev.time_us), int(ev.thread) & 0xFFFFFFFF,
                          ev.frame, int(ev.iteration), info])


class Outputs:
    """What an output was, standing in for it in a replayed op_end (shape, dtype,
    nbytes: what the profiler reads)."""

    __slots__ = ("shape", "dtype", "nbytes")

    def __init__(self, shape: tuple[int, ...], dtype: Any, nbytes: int) -> None:
        self.shape, self.dtype, self.nbytes = shape, dtype, nbytes


class _Storage:
    """A variable's storage in a replayed op_end (a Ref output)."""

    __slots__ = ("value",)

    def __init__(self, value: Outputs) -> None:
        self.value = value

    def read(self) -> Outputs:
        return self.value


def _output(d: list[Any] | None) -> Any:
    if d is None:
        return DEAD
    shape, dtype, nbytes, ref = d
    out = Outputs(tuple(shape), None if dtype is None else np.dtype(dtype), int(nbytes))
    return _Storage(out) if ref else out


def replay(rows: list[list[Any]], step_id: int, offset_us: float, listener: Any) -> None:
    """Hand `rows` to `listener` as ExecEvents on the client's clock.  Their `op` is
    None: the task ran its own copy of each op; listeners find the client's by the
    node's name (what the profiler's resolver does)."""
    for kind, node, op_type, device, t, thread, frame, iteration, info in rows:
        if kind == "op_end" and info is not None:
            info = [_output(d) for d in info]
        elif kind == "error":
            info = errors.UnknownError(None, None, str(info))
        listener(ExecEvent(kind, step_id, node, op_type, device, t - offset_us, thread, info, frame, iteration))


def clock_offset_us(sent_us: float, task_us: float, received_us: float, task_boot: str | None = None) -> float:
    """The task's clock minus the client's.  On the same machine (the same boot: the
    monotonic clock is one clock for every process) exactly 0; elsewhere estimated from
    one exchange, the task having read its clock at `task_us` half way between send
    and receive."""
    if task_boot is not None and task_boot == boot_id():
        return 0.0
    return task_us - (sent_us + received_us) / 2.0


def boot_id() -> str | None:
    """This machine's boot id (Linux), which names the monotonic clock's epoch."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None
