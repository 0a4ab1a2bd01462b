"""Summaries of a trace: tables of top ops, device utilization, transfers, and the
critical path of a step.

Definitions (what the numbers mean):

* busy time of a device: the length of the union of its ops' intervals, leaving out
  dead ops and the ops that wait rather than compute (`_Recv`, queue Enqueue/Dequeue);
  its busy fraction is busy time over the step's span (first start to last end, over
  all devices), summed over steps;
* per op: number of executions, median and total µs (over steps and iterations);
* critical path: from the op that ended last (dead ops aside), repeatedly to the
  input (data, control, or the matching `_Send` of a `_Recv`) that ended last before
  it started (or, for a `_Recv` posted before its `_Send`, the Send);
  an op's time on the path runs from its predecessor's end (or its own start, if
  later) to its end.

Notes (`Summary.notes`, shown above the tables): what a learner should know before
trusting the numbers -- an op that took most of a step although it is small (its time
is more than half the step's span and over 20 times the median op's, and its outputs
are under 64 KiB: the usual cause is the machine, not the op), and a machine that was
busy when the trace was read (1-minute load average above the CPUs this process may
use, `Trace.machine_load`).  Both say what to do: trace several steps and read medians.

`Table` is a small column table with a fixed-width text repr and an HTML repr that
escapes every cell (op names are user text, never markup).
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence
from typing import Any

from flowlab.profiler.trace import OpRecord, Trace, busy_us
from flowlab.profiler.trace import plural as _n

__all__ = ["Summary", "Table", "critical_path", "summarize"]

_WAITING = ("_Recv", "_HostRecv")


class Table:
    """Rows of values under named columns; `rows`, `columns`, `to_records()`."""

    def __init__(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]

    def to_records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]

    def column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    @staticmethod
    def _fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 1 else f"{v:,.1f}"
        if isinstance(v, int) and not isinstance(v, bool):
            return f"{v:,}"
        return str(v)

    def __repr__(self) -> str:
        cells = [self.columns] + [[self._fmt(v) for v in r] for r in self.rows]
        widths = [max(len(c[i]) for c in cells) for i in range(len(self.columns))]
        lines = [self.title]
        for j, row in enumerate(cells):
            lines.append("  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
            ).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths))
        if not self.rows:
            lines.append("(none)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(self._fmt(v))}</td>" for v in r) + "</tr>"
            for r in self.rows
        )
        return (f"<table><caption style='text-align:left'><b>{html.escape(self.title)}</b>"
                f"</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


class Summary:
    """The tables of a trace: `top_ops`, `devices`, `transfers`, `critical_path`; and
    `notes`, the warnings to read first (see the module docstring)."""

    def __init__(self, header: str, tables: dict[str, Table], notes: Sequence[str] = ()) -> None:
        self.header = header
        self.tables = tables
        self.notes = list(notes)

    def __getattr__(self, name: str) -> Table:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        notes = "\n".join(f"Note: {n}" for n in self.notes)
        return "\n\n".join([self.header] + ([notes] if notes else [])
                           + [repr(t) for t in self.tables.values()])

    def _repr_html_(self) -> str:
        notes = "".join(
            '<p style="background:#fff3cd;border-left:4px solid #e0a800;padding:4px 8px">'
            f"<b>Note:</b> {html.escape(n)}</p>" for n in self.notes
        )
        return (f"<div><p>{html.escape(self.header)}</p>{notes}"
                + "".join(t._repr_html_() for t in self.tables.values()) + "</div>")


def _is_compute(r: OpRecord, queue_waits: set[int]) -> bool:
    return not r.dead and r.op_type not in _WAITING and id(r) not in queue_waits


def _by_step(trace: Trace) -> dict[int, list[OpRecord]]:
    groups: dict[int, list[OpRecord]] = {}
    for r in trace.ops:
        groups.setdefault(r.step_id, []).append(r)
    return groups


def device_utilization(trace: Trace) -> Table:
    """Per device: ops run, busy µs, busy fraction of the steps' spans, peak memory."""
    waits = {id(r) for r in trace.queue_waits}
    span = 0.0
    busy: dict[str, float] = dict.fromkeys(trace.devices, 0.0)
    counts: dict[str, int] = dict.fromkeys(trace.devices, 0)
    for ops in _by_step(trace).values():
        span += max(r.end_us for r in ops) - min(r.start_us for r in ops)
        per_device: dict[str, list[OpRecord]] = {}
        for r in ops:
            if _is_compute(r, waits):
                per_device.setdefault(r.device, []).append(r)
        for d, mine in per_device.items():
            busy[d] += busy_us(mine)
            counts[d] += len(mine)
    rows = [
        [_short(d), counts[d], busy[d], busy[d] / span if span > 0 else 0.0, trace.peak_memory(d)]
        for d in busy
    ]
    return Table("Devices", ["device", "ops", "busy_us", "busy_fraction", "peak_bytes"], rows)


def top_ops(trace: Trace, top: int = 10) -> Table:
    """Nodes by total time, with executions and the median µs per execution."""
    by: dict[str, list[OpRecord]] = {}
    for r in trace.ops:
        if not r.dead:
            by.setdefault(r.name, []).append(r)
    rows: list[list[Any]] = []
    for name, rs in by.items():
        d = [r.duration_us for r in rs]
        rows.append([name, rs[0].op_type, _short(rs[0].device), len(rs), statistics.median(d), sum(d)])
    rows.sort(key=lambda r: -r[5])
    return Table("Top ops by total time", ["op", "type", "device", "count", "median_us", "total_us"],
                 rows[:top])


def transfer_table(trace: Trace) -> Table:
    """Per (source, destination) device pair: transfers, bytes, total and max wait."""
    by: dict[tuple[str, str], list[Any]] = {}
    for t in trace.transfers:
        by.setdefault((t.src_device, t.dst_device), []).append(t)
    rows = [
        [_short(s), _short(d), len(ts), sum(t.bytes for t in ts), sum(t.wait_us for t in ts),
         max(t.wait_us for t in ts)]
        for (s, d), ts in by.items()
    ]
    return Table("Transfers (Send -> Recv)",
                 ["src", "dst", "count", "bytes", "wait_us", "max_wait_us"], rows)


def critical_path(trace: Trace, step_id: int | None = None) -> list[OpRecord]:
    """See the module docstring; returns the ops in execution order."""
    if not trace.ops:
        return []
    sid = trace.steps[-1] if step_id is None else step_id
    ops = [r for r in trace.ops if r.step_id == sid]
    by_name: dict[str, list[OpRecord]] = {}
    for r in ops:
        by_name.setdefault(r.name, []).append(r)
    send_of = {id(t.recv): t.send for t in trace.transfers
               if t.step_id == sid and t.recv is not None and t.send is not None}
    cur = max(ops, key=lambda r: (not r.dead, r.end_us))
    path = [cur]
    seen = {id(cur)}
    while True:
        s = send_of.get(id(cur))
        if s is not None and id(s) not in seen:
            # A Recv's value came from its Send, whenever the Recv was posted.
            seen.add(id(s))
            path.append(s)
            cur = s
            continue
        preds = [p for n in cur.input_ops for p in by_name.get(n, ()) if id(p) not in seen]
        before = [p for p in preds if p.end_us <= cur.start_us + 1e-3]
        if not (before or preds):
            break
        cur = max(before or preds, key=lambda r: r.end_us)
        seen.add(id(cur))
        path.append(cur)
    path.reverse()
    return path


def critical_path_table(trace: Trace, step_id: int | None = None) -> Table:
    """The critical path with, per op, the part of its time that was on the path: from
    when its last input became available (an op that started earlier -- a Recv posted
    before its Send -- was only waiting before that) to its end."""
    path = critical_path(trace, step_id)
    t0 = min((r.start_us for r in path), default=0.0)
    rows: list[list[Any]] = []
    prev_end = None
    for r in path:
        on_path = r.end_us - max(r.start_us, prev_end if prev_end is not None else r.start_us)
        rows.append([r.name, r.op_type, _short(r.device), r.start_us - t0, r.duration_us,
                     max(0.0, on_path)])
        prev_end = r.end_us
    total = (path[-1].end_us - path[0].start_us) if path else 0.0
    in_ops = sum(row[5] for row in rows)
    title = (f"Critical path of step {path[-1].step_id if path else '-'}: {_n(len(path), 'op')}, "
             f"{total:,.1f} us from its first op's start ({in_ops:,.1f} us in the ops, the "
             "rest between them)")
    return Table(title, ["op", "type", "device", "start_us", "duration_us", "on_path_us"], rows)


def summarize(trace: Trace, top: int = 10) -> Summary:
    """The standard summary of a trace (one step or many)."""
    groups = _by_step(trace)
    steps = list(groups)
    spans = [max(r.end_us for r in g) - min(r.start_us for r in g) for g in groups.values()]
    median_step = steps[spans.index(sorted(spans)[(len(spans) - 1) // 2])] if steps else None
    header = (f"{_n(len(steps), 'step')}, median {statistics.median(spans) if spans else 0.0:,.1f} us; "
              f"{_n(len(trace.ops), 'op execution')} on {_n(len(trace.devices), 'device')}; "
              f"{_n(len(trace.transfers), 'transfer')} moving {_n(trace.bytes_moved, 'byte')}; "
              f"{_n(len(trace.dead_ops), 'dead op')}; {_n(len(trace.queue_waits), 'queue wait')}")
    return Summary(header, {
        "top_ops": top_ops(trace, top),
        "devices": device_utilization(trace),
        "transfers": transfer_table(trace),
        "critical_path": critical_path_table(trace, median_step),
    }, notes(trace))


# An op is "small" below this many output bytes, and "dominates" a step when it takes
# more than DOMINATES of its span and over SLOWER times the median op.
SMALL_OUTPUT_BYTES = 64 * 1024
DOMINATES = 0.5
SLOWER = 20.0


def notes(trace: Trace) -> list[str]:
    """The warnings of a trace's summary (see the module docstring)."""
    out: list[str] = []
    waits = {id(r) for r in trace.queue_waits}
    for sid, ops in _by_step(trace).items():
        compute = [r for r in ops if _is_compute(r, waits)]
        if len(compute) < 3:
            continue
        span = max(r.end_us for r in ops) - min(r.start_us for r in ops)
        median = statistics.median(r.duration_us for r in compute)
        worst = max(compute, key=lambda r: r.duration_us)
        if (span > 0 and worst.duration_us > DOMINATES * span
                and worst.duration_us > SLOWER * max(median, 1.0) and worst.bytes < SMALL_OUTPUT_BYTES):
            out.append(
                f"in step {sid}, {worst.op_type} '{worst.name}' took {_ms(worst.duration_us)} of the "
                f"step's {_ms(span)}, {worst.duration_us / max(median, 1.0):,.0f} times the median op, "
                f"for {_n(worst.bytes, 'byte')} of output. An op that small is rarely that slow: the "
                "machine was probably busy (another process, or a first run). Trace a few steps "
                "(`with fl.profile(sess) as prof:`) and read the medians."
            )
            break  # one such note says it; the tables show the rest
    load = getattr(trace, "machine_load", None)
    if load is not None and load[0] > load[1]:
        out.append(
            f"the machine was busy when this trace was read: load average {load[0]:.1f} on "
            f"{_n(load[1], 'CPU')}, so op times include waiting for a CPU. Compare runs "
            "made on a quiet machine, or trace several steps and read the medians."
        )
    return out


def _ms(us: float) -> str:
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:,.0f} us"


def _short(device: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:1' -> 'CPU:1' (with the task when
    it is not the local one)."""
    i = device.find("/device:")
    if i < 0:
        return device
    task = device[:i]
    dev = device[i + len("/device:"):]
    return dev if task in ("", "/job:localhost/replica:0/task:0") else f"{task}/{dev}"
