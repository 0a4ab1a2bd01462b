"""A step trace: what ran where and when, as plain records (paper section 3.2's
"per-step statistics"; TensorFlow's Timeline).

A `Trace` is built from `StepStats` (`Trace.from_run_metadata(md)`, or by
`flowlab.profiler.profile` from a session's events) and is read-only afterwards:

* `ops`: one `OpRecord` per execution of a node -- per step, and per frame/iteration
  inside loops -- with start/end in µs on the process's monotonic clock, device, task,
  executor thread, output shapes/dtypes/bytes, and whether it was dead;
* `transfers`: one `TransferRecord` per `_Send`/`_Recv` pair, matched by the
  rendezvous key (tensor name, the two devices, step, frame, iteration), with the
  bytes moved and the receiver's wait (its start until its value was available);
* `queue_waits`: the asynchronous queue ops (Enqueue/Dequeue), whose duration is the
  time spent waiting for room or for elements;
* `memory`: per device, the bytes in use over the step, counted as the live output
  bytes of the ops on that device: an output is allocated when its op ends and freed
  when the last op of the same step (and frame/iteration) reading it ends; an output
  nobody in the trace reads (a fetch, an unused output) lives until the step's end.
  A variable's storage and a kernel's temporaries are not counted; Ref outputs are
  0 bytes (they alias the variable).

Every record keeps `task` and `device`, so traces of several tasks (Dask workers)
merge by concatenation.  Exports and analyses live in `chrome`, `plot`, `summary`.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowlab.kernels.registry import find_kernel
from flowlab.runtime.client.step_stats import TRANSFER_OP_TYPES, task_of
from flowlab.runtime.config import RunMetadata, StepStats

__all__ = ["MemorySample", "OpRecord", "OutputRecord", "Trace", "TransferRecord"]


@dataclass(frozen=True)
class OutputRecord:
    """One produced tensor: slot, shape, dtype name and bytes."""

    slot: int
    shape: tuple[int, ...]
    dtype: str
    bytes: int


@dataclass(frozen=True)
class OpRecord:
    """One execution of one node."""

    name: str
    op_type: str
    device: str
    task: str
    thread: int
    start_us: float
    end_us: float
    step_id: int = 0
    frame: str = ""
    iteration: int = 0
    outputs: tuple[OutputRecord, ...] = ()
    inputs: tuple[str, ...] = ()
    dead: bool = False
    error: str = ""
    attrs: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us

    @property
    def bytes(self) -> int:
        """Bytes of the outputs this execution produced."""
        return sum(o.bytes for o in self.outputs)

    @property
    def input_ops(self) -> list[str]:
        """Names of the ops this one waits for (data and control inputs)."""
        return [n[1:] if n.startswith("^") else n.rsplit(":", 1)[0] for n in self.inputs]


@dataclass(frozen=True)
class TransferRecord:
    """One tensor moved by a `_Send`/`_Recv` pair (either side may be missing when
    only one partition was traced)."""

    tensor_name: str
    src_device: str
    dst_device: str
    bytes: int
    step_id: int
    frame: str
    iteration: int
    send: OpRecord | None
    recv: OpRecord | None

    @property
    def tensor(self) -> str:
        """The tensor the pair carries (`layer1/Relu:0`), from the Send's input; else the
        rendezvous name without the partitioner's `edge_<n>_` prefix."""
        if self.send is not None and self.send.inputs:
            inp = self.send.inputs[0]
            return inp if ":" in inp else inp + ":0"
        return re.sub(r"^edge_\d+_", "", self.tensor_name)

    @property
    def src_task(self) -> str:
        return task_of(self.src_device)

    @property
    def dst_task(self) -> str:
        return task_of(self.dst_device)

    @property
    def wait_us(self) -> float:
        """The receiver's wait: from the Recv's start until its value was available."""
        return self.recv.duration_us if self.recv is not None else 0.0

    @property
    def latency_us(self) -> float:
        """From the Send's start to the value being available at the Recv."""
        if self.send is None or self.recv is None:
            return 0.0
        return max(0.0, self.recv.end_us - self.send.start_us)


@dataclass(frozen=True)
class MemorySample:
    time_us: float
    bytes: int


def _is_queue_wait(op_type: str) -> bool:
    if not op_type.startswith("Queue") or "Enqueue" not in op_type and "Dequeue" not in op_type:
        return False
    k = find_kernel(op_type, "CPU")
    return k is None or k.asynchronous


class Trace:
    """The records of one or more steps.  Build with `Trace.from_run_metadata(md)` or
    `Trace.from_step_stats(stats)`; `flowlab.profiler.profile(sess)` builds one per
    block."""

    def __init__(self, ops: Iterable[OpRecord], thread_names: dict[int, str] | None = None) -> None:
        self.ops: list[OpRecord] = sorted(ops, key=lambda r: (r.start_us, r.end_us))
        self.thread_names: dict[int, str] = dict(thread_names or {})
        self.transfers: list[TransferRecord] = _pair_transfers(self.ops)
        self.queue_waits: list[OpRecord] = [r for r in self.ops if _is_queue_wait(r.op_type)]
        self._memory: dict[str, list[MemorySample]] | None = None
        self._threads: dict[str, list[int]] | None = None
        # How busy the machine was when the trace was read (1-minute load average, CPUs):
        # a busy machine stretches op times, and the summary says so.
        self.machine_load: tuple[float, int] | None = machine_load()

    # --- building -----------------------------------------------------------------
    @classmethod
    def from_run_metadata(cls, md: RunMetadata) -> Trace:
        """The trace in `md.step_stats` (filled by a run with FULL_TRACE)."""
        return cls.from_step_stats(md.step_stats)

    @classmethod
    def from_step_stats(cls, stats: StepStats) -> Trace:
        """Records of a flowlab StepStats -- or of TensorFlow's StepStats protobuf
        (op types and inputs then come from `timeline_label`, dtypes as TF enums), so
        that a TensorFlow step can be looked at with the same tools."""
        ops = []
        names: dict[int, str] = {}
        for ds in stats.dev_stats:
            names.update(dict(ds.thread_names))
            for n in ds.node_stats:
                op_type, label_inputs = _parse_label(n.timeline_label)
                outs = tuple(
                    OutputRecord(
                        o.slot, tuple(d.size for d in o.tensor_description.shape.dim),
                        getattr(o.tensor_description.dtype, "name", str(o.tensor_description.dtype)),
                        o.tensor_description.allocation_description.requested_bytes,
                    )
                    for o in n.output
                )
                start = (n.all_start_nanos or n.all_start_micros * 1000) / 1000.0
                dur = (n.all_end_rel_nanos or n.all_end_rel_micros * 1000) / 1000.0
                ops.append(OpRecord(
                    name=n.node_name, op_type=getattr(n, "op_type", "") or op_type,
                    device=ds.device, task=getattr(n, "task", "") or task_of(ds.device),
                    thread=n.thread_id, start_us=start, end_us=start + dur,
                    step_id=getattr(n, "step_id", 0), frame=getattr(n, "frame", ""),
                    iteration=getattr(n, "iteration", 0), outputs=outs,
                    inputs=tuple(getattr(n, "inputs", None) or label_inputs),
                    dead=getattr(n, "dead", False), error=getattr(n, "error", ""),
                    attrs=dict(getattr(n, "attrs", {})),
                ))
        return cls(ops, names)

    # --- views --------------------------------------------------------------------
    @property
    def devices(self) -> list[str]:
        """Devices in order of first activity, grouped by task."""
        first: dict[str, float] = {}
        for r in self.ops:
            first.setdefault(r.device, r.start_us)
        return sorted(first, key=lambda d: (task_of(d), first[d]))

    @property
    def steps(self) -> list[int]:
        return list(dict.fromkeys(r.step_id for r in self.ops))

    def step(self, step_id: int) -> Trace:
        """The records of one step."""
        return Trace((r for r in self.ops if r.step_id == step_id), self.thread_names)

    def threads(self, device: str) -> list[int]:
        """Executor threads that ran ops of `device`, in order of first use."""
        if self._threads is None:
            lanes: dict[str, dict[int, None]] = {}
            for r in self.ops:
                lanes.setdefault(r.device, {})[r.thread] = None
            self._threads = {d: list(t) for d, t in lanes.items()}
        return list(self._threads.get(device, ()))

    def op(self, name: str) -> list[OpRecord]:
        """Every execution of the node `name`."""
        return [r for r in self.ops if r.name == name]

    @property
    def start_us(self) -> float:
        return min((r.start_us for r in self.ops), default=0.0)

    @property
    def end_us(self) -> float:
        return max((r.end_us for r in self.ops), default=0.0)

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us

    @property
    def dead_ops(self) -> list[OpRecord]:
        return [r for r in self.ops if r.dead]

    @property
    def bytes_moved(self) -> int:
        return sum(t.bytes for t in self.transfers)

    # --- memory -------------------------------------------------------------------
    @property
    def memory(self) -> dict[str, list[MemorySample]]:
        """Per device, (time, bytes in use) at each change (see the module docstring
        for what is counted)."""
        if self._memory is None:
            self._memory = _memory_timelines(self.ops)
        return self._memory

    def peak_memory(self, device: str) -> int:
        return max((s.bytes for s in self.memory.get(device, ())), default=0)

    # --- analyses and exports (see summary, chrome, plot) -------------------------
    def critical_path(self, step_id: int | None = None) -> list[OpRecord]:
        """The chain of ops that decided when the step ended (default: the trace's
        last step): from the last op to finish, back through the input that became
        available last, to an op with no traced input."""
        from flowlab.profiler.summary import critical_path

        return critical_path(self, step_id)

    def summary(self, top: int = 10) -> Any:
        """Top ops by time, per-device utilization, bytes moved, critical path."""
        from flowlab.profiler.summary import summarize

        return summarize(self, top)

    def chrome_trace(self) -> dict[str, Any]:
        """The Chrome trace event JSON object (Perfetto, chrome://tracing)."""
        from flowlab.profiler.chrome import chrome_trace

        return chrome_trace(self)

    def to_chrome(self, path: str) -> str:
        """Write the Chrome trace event JSON to `path` (open it in Perfetto)."""
        from flowlab.profiler.chrome import write_chrome

        return write_chrome(self, path)

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """A matplotlib Gantt chart per device with transfers as arrows; returns
        the Figure."""
        from flowlab.profiler.plot import plot_trace

        return plot_trace(self, ax=ax, **kwargs)

    def _repr_html_(self) -> str:
        from flowlab.profiler.html import trace_html

        return trace_html(self)

    # Notebook display: its picture (flowlab.viz, imported only when shown).
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from flowlab.viz import mimebundle

        return mimebundle(self, include, exclude)

    def __repr__(self) -> str:
        return (
            f"<Trace {plural(len(self.steps), 'step')}, {plural(len(self.ops), 'op execution')} on "
            f"{plural(len(self.devices), 'device')}, {plural(len(self.transfers), 'transfer')}, "
            f"{self.duration_us:.0f} us>"
        )

    def __len__(self) -> int:
        return len(self.ops)


def plural(k: int, noun: str) -> str:
    """`1 transfer`, `3 transfers`, `1,024 bytes`: a count and its noun, agreed."""
    return f"{k:,} {noun}{'' if k == 1 else 's'}"


def machine_load() -> tuple[float, int] | None:
    """(1-minute load average, CPUs this process may use), or None where the OS does not
    say (Windows)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return float(load), int(cpus)


def _parse_label(label: str) -> tuple[str, tuple[str, ...]]:
    """'MatMul = MatMul(a, b:1)' -> ('MatMul', ('a:0', 'b:1'))."""
    _, _, rhs = label.partition(" = ")
    op_type, _, args = rhs.partition("(")
    inputs = []
    for a in args.rstrip(")").split(", "):
        if a:
            inputs.append(a if a.startswith("^") or ":" in a else a + ":0")
    return op_type.strip(), tuple(inputs)


def _pair_transfers(ops: Sequence[OpRecord]) -> list[TransferRecord]:
    sends: dict[tuple[Any, ...], OpRecord] = {}
    recvs: dict[tuple[Any, ...], OpRecord] = {}
    for r in ops:
        if r.op_type not in TRANSFER_OP_TYPES or "tensor_name" not in r.attrs:
            continue
        key = (r.step_id, r.attrs["tensor_name"], str(r.attrs.get("send_device", "")),
               str(r.attrs.get("recv_device", "")), r.frame, r.iteration)
        (recvs if "Recv" in r.op_type else sends)[key] = r
    out = []
    for key in list(dict.fromkeys(list(sends) + list(recvs))):
        s, v = sends.get(key), recvs.get(key)
        step_id, tensor, src, dst, frame, it = key
        out.append(TransferRecord(
            tensor_name=str(tensor), src_device=src or (s.device if s else ""),
            dst_device=dst or (v.device if v else ""),
            bytes=v.bytes if v is not None else 0, step_id=step_id, frame=frame,
            iteration=it, send=s, recv=v,
        ))
    out.sort(key=lambda t: (t.send or t.recv).start_us)  # type: ignore[union-attr]
    return out


def _memory_timelines(ops: Sequence[OpRecord]) -> dict[str, list[MemorySample]]:
    readers: dict[tuple[int, str], list[OpRecord]] = {}
    step_end: dict[int, float] = {}
    for r in ops:
        step_end[r.step_id] = max(step_end.get(r.step_id, r.end_us), r.end_us)
        for n in r.inputs:
            if not n.startswith("^") and not r.dead:
                readers.setdefault((r.step_id, n), []).append(r)
    changes: dict[str, list[tuple[float, int]]] = {}
    for r in ops:
        for o in r.outputs:
            if o.bytes <= 0:
                continue
            rs = readers.get((r.step_id, f"{r.name}:{o.slot}"), [])
            same = [c for c in rs if c.frame == r.frame and c.iteration == r.iteration]
            rs = same or rs
            free = max((c.end_us for c in rs), default=step_end[r.step_id])
            ch = changes.setdefault(r.device, [])
            ch.append((r.end_us, o.bytes))
            ch.append((max(free, r.end_us), -o.bytes))
    out: dict[str, list[MemorySample]] = {}
    for dev, ch in changes.items():
        # At equal times, frees before allocations: the peak is not overstated.
        ch.sort(key=lambda c: (c[0], c[1]))
        samples: list[MemorySample] = []
        level = 0
        for t, b in ch:
            level += b
            if samples and samples[-1].time_us == t:
                samples[-1] = MemorySample(t, level)
            else:
                samples.append(MemorySample(t, level))
        out[dev] = samples
    return out


def busy_us(records: Iterable[OpRecord]) -> float:
    """Length of the union of the records' intervals."""
    iv = sorted((r.start_us, r.end_us) for r in records)
    total = 0.0
    cur_s = cur_e = None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s  # type: ignore[operator]
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s  # type: ignore[operator]
    return total


def memory_at(samples: Sequence[MemorySample], t: float) -> int:
    """Bytes in use at time `t` from a device's samples."""
    i = bisect.bisect_right([s.time_us for s in samples], t) - 1
    return samples[i].bytes if i >= 0 else 0
