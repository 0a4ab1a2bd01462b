"""A LocalTask whose every message crosses Dask's serialization, both ways.

Installed in place of the Session's task by `--serialize-task-messages` (see
tests/conftest.py): each call's message is checked to be plain data
(`check_plain`), serialized with `distributed.protocol.serialize` using only the
'dask' (arrays, zero-copy frames) and 'msgpack' serializers -- so no pickle can hide
an object -- and deserialized before the task reads it; each reply goes back the same
way, and a failure's `error_to_message` dict too (the original exception is then
raised, so tests still see the op it names).
"""

from __future__ import annotations

from typing import Any

from distributed.protocol import deserialize, serialize

from flowlab.runtime.interface import (
    check_plain,
    error_to_message,
    values_from_wire,
    values_to_wire,
)
from flowlab.runtime.task.task import LocalTask

MESSAGES = {"count": 0}


def round_trip(message: Any, where: str) -> Any:
    check_plain(message, where)
    header, frames = serialize(message, serializers=("dask", "msgpack"), on_error="raise", iterate_collection=True)
    MESSAGES["count"] += 1
    return deserialize(header, frames)


class SerializingTask(LocalTask):
    def _call(self, name: str, message: dict[str, Any]) -> dict[str, Any]:
        message = round_trip(message, name)
        try:
            reply = getattr(super(), name)(message)
        except Exception as e:
            round_trip(error_to_message(e), f"{name} error")
            raise
        return round_trip(reply, f"{name} reply")

    def register_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._call("register_partitions", message)

    def deregister_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._call("deregister_partitions", message)

    def abort_step(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._call("abort_step", message)

    def commit_step(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._call("commit_step", message)

    def recv_tensor(self, message: dict[str, Any]) -> dict[str, Any]:
        reply = super().recv_tensor(round_trip(message, "recv_tensor"))
        back = round_trip({**reply, "value": values_to_wire([reply["value"]])[0]}, "recv_tensor reply")
        return {**back, "value": values_from_wire([back["value"]])[0]}

    def status(self, message: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._call("status", message or {})

    def run(self, handle: str, step_id: int, feeds: list[Any], timeout_ms: int = 0,
            listener: Any = None, traced: bool = False) -> list[Any]:
        """The Session's in-process call, made as a `run_step` message (a listener,
        in-process by nature, is handed over beside it)."""
        m = round_trip({"handle": handle, "step_id": step_id, "feeds": values_to_wire(feeds),
                        "timeout_ms": timeout_ms, "trace": traced}, "run_step")
        try:
            values = super().run(m["handle"], m["step_id"], values_from_wire(m["feeds"]), m["timeout_ms"],
                                 listener, m["trace"])
        except Exception as e:
            round_trip(error_to_message(e), "run_step error")
            raise
        return values_from_wire(round_trip({"values": values_to_wire(values)}, "run_step reply")["values"])
