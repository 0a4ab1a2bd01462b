"""Task-interface messages on Dask's comm: what is wrapped, what is checked.

Messages of the task interface (flowlab.runtime.interface) are plain data.  On the
wire, Dask writes the structure with msgpack and each NumPy array as its own frames
(`to_serialize`: a contiguous array travels as a memoryview, not copied into the
message).  A NumPy scalar becomes the Python number of its kind; values of a step
keep their exact type through `values_to_wire` (0-d arrays).

A task server checks every message it receives before it acts on it
(`check_message`): the fields it needs, with their types; anything else is refused
with InvalidArgumentError and changes nothing.  Nothing is unpickled that a peer
chose: only arrays travel outside msgpack, through Dask's own serializers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.runtime.interface import as_lists, check_plain

__all__ = ["FIELDS", "check_message", "from_wire", "owned", "to_wire"]


class Wired(dict):  # type: ignore[type-arg]
    """A message ready for the comm, knowing its arrays' bytes: Dask's comm asks every
    message's `sizeof` to decide whether to serialize it off the event loop, and its
    generic answer walks the whole message -- a tenth of a small step's CPU."""

    nbytes = 0


def _sizeof_wired(m: Wired) -> int:
    return m.nbytes + 64 * len(m)


def to_wire(message: Any) -> Any:
    """`message` ready for Dask's comm: arrays wrapped to travel as frames (a
    dict message as a `Wired`, its arrays' bytes counted on the way)."""
    from distributed.protocol import to_serialize

    nbytes = 0

    def wrap(m: Any) -> Any:
        nonlocal nbytes
        if type(m) is np.ndarray:
            nbytes += m.nbytes
            return to_serialize(m)
        if isinstance(m, np.generic):
            return m.item()
        if isinstance(m, dict):
            return {k: wrap(v) for k, v in m.items()}
        if isinstance(m, (list, tuple)):
            return [wrap(v) for v in m]
        return m

    out = wrap(message)
    if type(out) is dict:
        out = Wired(out)
        out.nbytes = nbytes
    return out


def _register_sizeof() -> None:
    from dask.sizeof import sizeof

    sizeof.register(Wired)(_sizeof_wired)


_register_sizeof()


def from_wire(message: Any) -> Any:
    """What a handler received, as the interface's plain data (tuples as lists)."""
    return as_lists(message)


def owned(values: list[Any], address: str) -> list[Any]:
    """`values` received from the peer at `address`, made writeable: an array that
    crossed a network comm sits in a buffer this process just allocated for it, so it
    is the receiver's own (as a Recv'd tensor is in TensorFlow) and need not be copied
    again before a fetch returns it or a kernel updates it in place.  Dask marks it
    read-only when the sender's array was (a variable's storage); only an in-process
    comm ("inproc://") hands over the sender's very object, which stays protected."""
    if address.startswith("inproc://"):
        return values
    for v in values:
        if type(v) is np.ndarray and not v.flags.writeable:
            try:
                v.flags.writeable = True
            except ValueError:  # a buffer that is read-only underneath: leave it so
                pass
    return values


# The fields each call needs, with the types they must have (a tuple: any of them).
FIELDS: dict[str, dict[str, Any]] = {
    "register_partitions": {"handle": str, "graph_version": int, "units": list, "num_fetches": int},
    "run_step": {"handle": str, "step_id": int, "feeds": list},
    "recv_tensor": {"step_id": int, "key": str},
    "push_tensor": {"handle": str, "step_id": int, "key": str, "is_dead": bool, "task": str, "incarnation": int},
    "abort_step": {"step_id": int},
    "commit_step": {"step_id": int},
    "deregister_partitions": {"handle": str},
    "status": {},
    "reset": {},
    "step_events": {"step_id": int},
}


# Fields a call may leave out, with the types they must have when given.
OPTIONAL: dict[str, dict[str, Any]] = {
    "register_partitions": {"library": list},
    "run_step": {"timeout_ms": int, "trace": bool, "commit": list, "deliver": list, "push": list,
                 "pushed": list},
    "recv_tensor": {"timeout_ms": int},
    "reset": {"containers": (list, type(None))},
}


# An entry of run_step's `push`: a key this task sends and the task that receives it.
_PUSH_ENTRY = {"key": str, "task": str, "incarnation": int, "address": str}


def check_message(call: str, message: Any) -> dict[str, Any]:
    """The message of `call` if it is well formed, else InvalidArgumentError naming
    what is wrong (the server replies with it and does nothing)."""
    if not isinstance(message, dict):
        raise errors.InvalidArgumentError(
            None, None, f"flowlab task server: {call} expects a message dict, got {type(message).__name__}.")
    for name, typ in FIELDS[call].items():
        if name not in message:
            raise errors.InvalidArgumentError(None, None, f"flowlab task server: {call} needs field '{name}'.")
        v = message[name]
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise errors.InvalidArgumentError(
                None, None, f"flowlab task server: field '{name}' of {call} must be {typ.__name__}, "
                f"got {type(v).__name__}.")
    for name, typ in OPTIONAL.get(call, {}).items():
        if name in message and (not isinstance(message[name], typ) or (typ is int and isinstance(message[name], bool))):
            raise errors.InvalidArgumentError(
                None, None, f"flowlab task server: field '{name}' of {call} has the wrong type "
                f"({type(message[name]).__name__}).")
    if call == "run_step" and not all(isinstance(s, int) for s in message.get("commit") or []):
        raise errors.InvalidArgumentError(None, None, "flowlab task server: 'commit' of run_step must list step ids.")
    if call == "run_step":
        for name in ("deliver", "pushed"):
            if not all(isinstance(k, str) for k in message.get(name) or []):
                raise errors.InvalidArgumentError(
                    None, None, f"flowlab task server: '{name}' of run_step must list keys.")
        if not all(isinstance(e, dict) and all(isinstance(e.get(f), t) for f, t in _PUSH_ENTRY.items())
                   for e in message.get("push") or []):
            raise errors.InvalidArgumentError(
                None, None, "flowlab task server: 'push' of run_step must list {'key', 'task', 'incarnation', "
                "'address'} of each key's receiver.")
    try:
        check_plain(message, call)
    except TypeError as e:
        raise errors.InvalidArgumentError(None, None, f"flowlab task server: {e}") from None
    return message
