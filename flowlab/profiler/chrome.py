"""Chrome trace event JSON of a trace (opens in Perfetto and chrome://tracing).

Layout: one process (pid) per device, named by `process_name` metadata with the full
device name (task included) and sorted by task then device; one thread lane (tid) per
executor thread that ran ops of that device, named by `thread_name`.  Each op
execution is an "X" complete event (name = node name, cat = op type; args: op type,
step, frame, iteration, output shapes/dtypes/bytes, dead, error); each Send->Recv
pair is a flow ("s" on the Send's slice, "f" with binding point "e" on the Recv's,
same id); each device's memory in use is a "C" counter track.  Times are µs from the
trace's first op (the format's unit), fractional.
"""

from __future__ import annotations

import json
from typing import Any

from flowlab.profiler.trace import OpRecord, Trace

__all__ = ["chrome_trace", "write_chrome"]


def chrome_trace(trace: Trace) -> dict[str, Any]:
    """The trace as a Chrome trace event object {"traceEvents": [...], ...}."""
    t0 = trace.start_us
    events: list[dict[str, Any]] = []
    pids: dict[str, int] = {}
    tids: dict[tuple[str, int], int] = {}
    for i, dev in enumerate(trace.devices):
        pid = pids[dev] = i + 1
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": dev}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": i}})
        for j, th in enumerate(trace.threads(dev)):
            tid = tids[(dev, th)] = j + 1
            name = trace.thread_names.get(th, f"thread {th}")
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": f"{name} ({th})"}})

    def where(r: OpRecord) -> dict[str, int]:
        return {"pid": pids[r.device], "tid": tids[(r.device, r.thread)]}

    for r in trace.ops:
        args: dict[str, Any] = {"op": r.op_type, "step": r.step_id, "task": r.task}
        if r.frame:
            args["frame"] = r.frame
            args["iteration"] = r.iteration
        for o in r.outputs:
            args[f"output{o.slot}"] = f"{o.dtype}{list(o.shape)} {o.bytes} B"
        args["bytes"] = r.bytes
        if r.inputs:
            args["inputs"] = ", ".join(r.inputs)
        if r.dead:
            args["dead"] = True
        if r.error:
            args["error"] = r.error
        events.append({
            "ph": "X", "name": r.name, "cat": "dead" if r.dead else r.op_type,
            "ts": r.start_us - t0, "dur": r.duration_us, **where(r), "args": args,
        })
    for k, t in enumerate(trace.transfers):
        if t.send is None or t.recv is None:
            continue
        common = {"name": t.tensor_name, "cat": "transfer", "id": k + 1}
        events.append({"ph": "s", "ts": _inside(t.send) - t0, **where(t.send), **common})
        events.append({"ph": "f", "bp": "e", "ts": _inside(t.recv) - t0, **where(t.recv),
                       **common, "args": {"bytes": t.bytes, "wait_us": t.wait_us,
                                          "src": t.src_device, "dst": t.dst_device}})
    for dev, samples in trace.memory.items():
        for s in samples:
            events.append({"ph": "C", "name": "memory", "pid": pids[dev], "tid": 0,
                           "ts": s.time_us - t0, "args": {"bytes_in_use": s.bytes}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"producer": "flowlab.profiler", "steps": trace.steps,
                      "bytes_moved": trace.bytes_moved},
    }


def _inside(r: OpRecord) -> float:
    """A time within the op's slice, so that a flow event binds to it."""
    return r.start_us + r.duration_us / 2


def write_chrome(trace: Trace, path: str) -> str:
    """Write `chrome_trace(trace)` to `path` as JSON; returns the path."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(trace), f)
    return str(path)
