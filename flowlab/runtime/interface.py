"""The task interface: the narrow boundary between the master and the tasks.

The master (flowlab.runtime.master) decides what runs where; a task
(flowlab.runtime.task) owns devices and their state and runs what it is sent.  They
talk only through the seven calls of `Task`, and every message is plain data: dicts,
lists, strings, numbers, booleans, None and NumPy arrays.  No Operation, Graph,
closure or lock crosses, so the same calls work in one process (the local Session's
in-process tasks) and over a network (Dask comm handlers, flowlab.distributed); a
test sends every message of the suite's partitioned programs through Dask's
serialization and gets the same values.

The messages (fields in order; "names" are node or tensor names of the GraphDefs):

    register_partitions(RegisterPartitions) -> {"handle", "task", "incarnation"}
        handle        str   chosen by the master, unique per (session, step signature)
        graph_version int   the client graph's version the partitions were cut from
        units         list  the task's partitions, each:
            graph_def    GraphDef JSON (flowlab.graph.graph_def schema); every node's
                         "device" is its assigned device (a full name of this task)
            feeds        list[str]  fed tensors of this unit ("_arg_x_0:0" nodes)
            feed_index   list[int]  their positions in the step's feed list
            fetches      list[str]  tensors of this unit the step returns
            fetch_index  list[int]  their positions in the step's fetch list
        pairs         list  Send/Recv pairs inside the task: {"send_op", "recv_op", "key"}
        sequence      list[str] | None  every node of the units in one order where each
                      Send precedes its Recv (lets the task fuse its units into one
                      straight-line function); None: never fuse
        num_fetches   int   length of the step's fetch list
        debug_info    {node name: [[file, line, function, code], ...]}: where each op
                      was defined, for error messages

    run_step(RunStep) -> {"values": [array...], "fetch_index": [int...]}
        handle, step_id (int, chosen by the master), feeds (list of arrays in the
        step's feed order; a task reads the positions its units name), timeout_ms
        (0: none), trace (bool: run on the executor, collecting events)

        optional: push (keys this task sends, each {"key", "task", "incarnation",
        "address"} of its receiver: handed over with push_tensor when the Send runs),
        pushed (keys this task receives that way: not pulled)

    recv_tensor({"step_id", "key", "timeout_ms"}) -> {"value": array, "is_dead": bool}
        a peer task pulls the value of a rendezvous key produced on this task

    push_tensor({"handle", "step_id", "key", "value", "is_dead", "task", "incarnation"})
        -> {"accepted": bool}
        a peer task hands over the value of a key it was told to push (the sender's
        task name and incarnation are checked against the registered receive)

    abort_step({"step_id", "reason"}) -> {"aborted": bool}
        cancel the step on this task: pending Recvs fail, its writes are rolled back
        (also a two-phase step that already finished here)

    commit_step({"step_id"}) -> {"committed": bool}
        a two-phase step (one that spans tasks) succeeded on every task: drop the undo
        log this task kept for it.  With several tasks "a failed step writes nothing"
        needs this: a task that finished cannot know another one failed.

    deregister_partitions({"handle"}) -> {"deregistered": bool}

    status({}) -> {"task", "incarnation", "devices": [DeviceAttributes dicts],
                   "handles": int, "running_steps": int}

Errors travel as `error_to_message` dicts ({"error": class name, "message", "node"})
and are raised again on the master by `error_from_message` with their TensorFlow
class, so `except tf.errors.InvalidArgumentError` works the same for every task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from flowlab import errors

__all__ = [
    "DeviceAttributes", "Task", "as_lists", "check_plain", "error_from_message", "error_to_message",
    "values_from_wire", "values_to_wire",
]


@dataclass(frozen=True)
class DeviceAttributes:
    """What a task tells the master about one of its devices (plain data)."""

    name: str
    device_type: str
    memory_limit_bytes: int
    incarnation: int

    def to_message(self) -> dict[str, Any]:
        return {"name": self.name, "device_type": self.device_type,
                "memory_limit_bytes": self.memory_limit_bytes, "incarnation": self.incarnation}

    @classmethod
    def from_message(cls, m: dict[str, Any]) -> DeviceAttributes:
        return cls(str(m["name"]), str(m["device_type"]), int(m["memory_limit_bytes"]), int(m["incarnation"]))


class Task(Protocol):
    """The calls a task answers (see the module docstring for the fields)."""

    def register_partitions(self, message: dict[str, Any]) -> dict[str, Any]: ...

    def run_step(self, message: dict[str, Any]) -> dict[str, Any]: ...

    def recv_tensor(self, message: dict[str, Any]) -> dict[str, Any]: ...

    def abort_step(self, message: dict[str, Any]) -> dict[str, Any]: ...

    def commit_step(self, message: dict[str, Any]) -> dict[str, Any]: ...

    def deregister_partitions(self, message: dict[str, Any]) -> dict[str, Any]: ...

    def status(self, message: dict[str, Any]) -> dict[str, Any]: ...


_SCALARS = (str, int, float, bool, type(None), np.generic, bytes)


def check_plain(message: Any, where: str = "message") -> None:
    """Raise TypeError naming the path of the first value in `message` that is not
    plain data (the invariant of every message of this interface)."""
    if isinstance(message, _SCALARS) or type(message) is np.ndarray:
        if type(message) is np.ndarray and message.dtype == object:
            for v in message.flat:
                if not isinstance(v, (bytes, str)):
                    raise TypeError(f"{where}: an object array holds {type(v).__name__}, not bytes")
        return
    if isinstance(message, dict):
        for k, v in message.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: key {k!r} is not a string")
            check_plain(v, f"{where}.{k}")
        return
    if isinstance(message, (list, tuple)):
        for i, v in enumerate(message):
            check_plain(v, f"{where}[{i}]")
        return
    raise TypeError(f"{where}: {type(message).__name__} is not plain data (dicts, lists, strings, numbers, arrays)")


def as_lists(message: Any) -> Any:
    """`message` with every tuple a list: transports may hand sequences back as tuples
    (Dask's msgpack does), and GraphDef JSON holds lists."""
    if isinstance(message, dict):
        return {k: as_lists(v) for k, v in message.items()}
    if isinstance(message, (list, tuple)):
        return [as_lists(v) for v in message]
    return message


def values_to_wire(values: list[Any]) -> list[Any]:
    """Feed or fetch values for a message: arrays as they are, a NumPy scalar (what a
    step returns for a 0-d value) as `{"scalar": 0-d array}` so its type survives
    transports that carry arrays but not NumPy scalars."""
    return [{"scalar": np.asarray(v)} if isinstance(v, np.generic) else v for v in values]


def values_from_wire(values: list[Any]) -> list[Any]:
    """The inverse of `values_to_wire`."""
    return [v["scalar"][()] if isinstance(v, dict) and "scalar" in v else v for v in values]


def error_to_message(exc: BaseException) -> dict[str, Any]:
    """A task's failure as plain data: the TensorFlow error class and its text."""
    node = getattr(exc, "op", None)
    return {
        "error": type(exc).__name__ if isinstance(exc, errors.OpError) else "UnknownError",
        "message": getattr(exc, "message", None) or str(exc),
        "node": getattr(node, "name", None),
    }


def error_from_message(m: dict[str, Any]) -> errors.OpError:
    """The master's side of `error_to_message`: the same TensorFlow error class."""
    cls = getattr(errors, str(m.get("error")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.OpError)) or cls is errors.OpError:
        cls = errors.UnknownError
    e = cls(None, None, str(m.get("message", "")))
    e.node_name = m.get("node")  # type: ignore[attr-defined]  # the client names its own op of that name
    return e
