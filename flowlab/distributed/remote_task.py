"""A task on a Dask worker, as the master and the Session see it.

`RemoteTask` has what the in-process `LocalTask` offers the master (its name,
incarnation and devices; `register_partitions`, `run`, `abort_step`, ...), but each
call is a message to the worker's task server (flowlab.distributed.task_server)
through the Dask client's connection pool.  Its devices are descriptions made from
the task's `status` (DeviceAttributes): the master places over them; nothing runs on
them here.

`Connection.run_tasks` runs one step on several tasks at once from the client's
event loop: all `run_step` messages leave together; when one task fails, the step is
aborted on every task (each rolls back its own writes) and the first real error is
raised.  A two-phase step that succeeded everywhere is committed without a message
of its own: the writes are in place already and a commit only lets a task drop its
undo log, so the commit rides on that task's next `run_step` (a task that wrote
nothing keeps no log and needs none).

Deadlines: every control call has one (`CONTROL_TIMEOUT_S`; registration, which
compiles, `REGISTER_TIMEOUT_S`).  A step may legitimately run long (a queue that
waits), so `run_step` has none of its own beyond the step's `timeout_in_ms`;
instead, while a step runs longer than `HEARTBEAT_S`, every task still running it is
asked for its status, and one that does not answer within `HEARTBEAT_TIMEOUT_S` --
a hung or stopped process -- fails the step with UnavailableError naming the task
and its address.  A dead process fails its calls at once (the connection closes).
"""

from __future__ import annotations

import asyncio
from typing import Any

from flowlab import errors
from flowlab.distributed.events import replay
from flowlab.distributed.functions import library_for
from flowlab.distributed.wire import from_wire, owned, to_wire
from flowlab.graph.device_spec import DeviceSpec
from flowlab.runtime.interface import (
    DeviceAttributes,
    error_from_message,
    values_from_wire,
    values_to_wire,
)
from flowlab.runtime.task.device import Device
from flowlab.runtime.task.partitioned_plan import CompiledPartition, PartitionedPlan, compile_units
from flowlab.runtime.task.plan import fetch_value
from flowlab.runtime.task.registration import import_unit
from flowlab.runtime.task.task import Registered

__all__ = ["Connection", "RemoteTask"]

CONTROL_TIMEOUT_S = 5.0
REGISTER_TIMEOUT_S = 60.0
HEARTBEAT_S = 1.0
HEARTBEAT_TIMEOUT_S = 3.0
MAX_UNCOMMITTED = 16  # steps whose commit waits for the task's next run_step
STREAM_S = 0.1  # how often a watched step's events are taken from its tasks while it runs


class Connection:
    """Calls to task servers from a synchronous Dask client's event loop."""

    def __init__(self, client: Any) -> None:
        if getattr(client, "asynchronous", False):
            raise ValueError("flowlab needs a synchronous dask.distributed Client (asynchronous=False).")
        self.client = client
        self._loop = client.loop.asyncio_loop

    def sync(self, coro: Any) -> Any:
        """Run `coro` on the client's loop and wait for it (from the user's thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def call(self, task: RemoteTask, call: str, message: dict[str, Any], timeout_s: float | None) -> Any:
        """One call's reply; its failures as TensorFlow errors naming the task."""
        if task.lost:
            raise errors.UnavailableError(
                None, None, f"Task {task.name} at {task.address} is gone: its worker died or restarted. A new "
                "session runs on the worker that replaces it (MonitoredTrainingSession makes one and restores "
                "the latest checkpoint).")
        send = getattr(self.client.rpc(task.address), f"flowlab_{call}")(message=to_wire(message))
        try:
            reply = await (asyncio.wait_for(send, timeout_s) if timeout_s else send)
        except TimeoutError:
            raise errors.UnavailableError(
                None, None, f"Task {task.name} at {task.address} did not answer {call} within {timeout_s:g} s "
                "(the process hangs or is stopped).") from None
        except OSError as e:  # CommClosedError is an OSError
            task.lost = True
            raise errors.UnavailableError(
                None, None, f"Task {task.name} at {task.address} is unreachable ({type(e).__name__}: {e}); "
                "the worker died or left the cluster. tf.train.MonitoredTrainingSession recovers from this (a "
                "new session, the latest checkpoint restored); with a plain tf.Session, open a new one once the "
                "task is back (its nanny restarts it under the same name) and restore the variables with "
                "tf.train.Saver.restore.") from None
        if not isinstance(reply, dict) or ("reply" not in reply and "error" not in reply):
            raise errors.UnavailableError(
                None, None, f"The worker at {task.address} has no flowlab task server (got {reply!r} for {call}).")
        if reply.get("incarnation") != task.incarnation:
            task.lost = True
            raise errors.UnavailableError(
                None, None, f"Task {task.name} at {task.address} restarted (incarnation {reply.get('incarnation')} "
                f"is not {task.incarnation}): its variables and queues are gone. Create a new session "
                "(MonitoredTrainingSession does) and restore the latest checkpoint.")
        if "error" in reply:
            raise error_from_message(reply["error"])
        return from_wire(reply["reply"])

    def call_sync(self, task: RemoteTask, call: str, message: dict[str, Any], timeout_s: float | None) -> Any:
        return self.sync(self.call(task, call, message, timeout_s))

    def run_tasks(self, tasks: list[RemoteTask], handle: str, step_id: int, feeds: list[Any], timeout_ms: int,
                  listener: Any, traced: bool) -> list[list[Any]]:
        """Each task's values of one step; with a listener or a trace, each task's
        events replayed to `listener` on the client's clock (flowlab.distributed.events)."""
        watched = traced or listener is not None
        replies = self.sync(self._run_tasks(tasks, handle, step_id, feeds, timeout_ms, watched, listener))
        if listener is not None:
            for t, r in zip(tasks, replies):
                replay(r.get("events") or [], step_id, t.clock_offset_us, listener)
        return [owned(values_from_wire(r["values"]), t.address) for t, r in zip(tasks, replies)]

    async def _run_tasks(self, tasks: list[RemoteTask], handle: str, step_id: int, feeds: list[Any],
                         timeout_ms: int, traced: bool, listener: Any = None) -> list[dict[str, Any]]:
        message = {"handle": handle, "step_id": step_id, "feeds": values_to_wire(feeds),
                   "timeout_ms": timeout_ms, "trace": traced}
        deadline = timeout_ms / 1000.0 + CONTROL_TIMEOUT_S if timeout_ms > 0 else None
        deliver = {} if traced else _deliveries(tasks, handle)
        # A task that only passes fetches on has nothing to do in an unwatched step
        # (flowlab.distributed.forwarding): its reply is known; only the others run.
        known = {} if traced else {id(t): v for t in tasks if (v := t.passive_reply(handle)) is not None}
        everyone, tasks = tasks, [t for t in tasks if id(t) not in known]
        pushes = _pushes(tasks, handle)

        def to(t: RemoteTask) -> dict[str, Any]:
            m = {**message, **pushes[t.name]} if t.name in pushes else message
            return t.with_commits({**m, "deliver": deliver[t.name]} if t.name in deliver else m)

        futures = [asyncio.ensure_future(self.call(t, "run_step", to(t), deadline)) for t in tasks]
        pending = set(futures)
        failure: BaseException | None = None
        hung: list[RemoteTask] = []
        loop = asyncio.get_running_loop()
        beat_at = loop.time() + HEARTBEAT_S
        while pending and failure is None:
            # Watched, wake every STREAM_S to hand the listener what the tasks did so far.
            wait_s = min(STREAM_S, HEARTBEAT_S) if listener is not None else HEARTBEAT_S
            done, pending = await asyncio.wait(pending, timeout=wait_s, return_when=asyncio.FIRST_EXCEPTION)
            failure = next((f.exception() for f in done if f.exception() is not None), None)
            if failure is None and pending and listener is not None:
                await self._stream_events([t for t, f in zip(tasks, futures) if f in pending], step_id, listener)
            if failure is None and pending and loop.time() >= beat_at:
                beat_at = loop.time() + HEARTBEAT_S
                running = [t for t, f in zip(tasks, futures) if f in pending]
                beats = await asyncio.gather(*(self.call(t, "status", {}, HEARTBEAT_TIMEOUT_S) for t in running),
                                             return_exceptions=True)
                hung = [t for t, b in zip(running, beats) if isinstance(b, BaseException)]
                failure = next((b for b in beats if isinstance(b, BaseException)), None)
        if failure is not None:
            answering = [t for t in tasks if t not in hung]
            for t in hung:  # told when it wakes, if it ever does; nobody waits for it
                asyncio.ensure_future(self._abort([t], step_id, "The master gave up on this task.", 120.0))
            for t, f in zip(tasks, futures):
                if t in hung:
                    f.cancel()
            await self._abort(answering, step_id, f"The step failed on another task: {failure}")
            # The others end soon (their Recvs and waits were cancelled).
            if pending:
                await asyncio.wait(pending, timeout=CONTROL_TIMEOUT_S)
            for f in futures:
                if not f.done():
                    f.cancel()
            # Again, now that every task has ended: roll back those that finished anyway.
            await self._abort(answering, step_id, "The step failed on another task.")
            raised: list[BaseException] = [failure]
            raised += [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]
            raise next((e for e in raised if not isinstance(e, (errors.CancelledError, errors.AbortedError))),
                       failure)
        ran = dict(zip(map(id, tasks), (f.result() for f in futures)))
        tasks = everyone
        replies = [ran[id(t)] if id(t) in ran else known[id(t)] for t in tasks]
        try:
            await self._take_forwarded(tasks, replies, step_id, timeout_ms)
        except BaseException as e:  # the step fails as a whole: nothing it wrote stays
            await self._abort([t for t in tasks if not t.lost], step_id, f"A fetch of the step was lost: {e}")
            raise
        # Each task's writes are in place already; a commit only drops its undo log, so
        # it rides on the task's next run_step (or a commit_step once a few are waiting).
        for t, r in zip(tasks, replies):
            if r.get("held"):
                t.uncommitted.append(step_id)
                if len(t.uncommitted) >= MAX_UNCOMMITTED:
                    asyncio.ensure_future(self._commit(t, t.take_commits()))
        return replies

    async def _take_forwarded(self, tasks: list[RemoteTask], replies: list[dict[str, Any]], step_id: int,
                              timeout_ms: int) -> None:
        """Replace each `{"forwarded": pull}` value of `replies` (a fetch its task only
        passed on, flowlab.distributed.forwarding) by the value pulled from the task
        that produced it."""
        wanted: dict[str, dict[str, Any]] = {}
        delivered: dict[str, Any] = {}
        for t, r in zip(tasks, replies):
            for key, d in (r.get("delivered") or {}).items():
                delivered[key] = (t, d)
            for v in r["values"]:
                if type(v) is dict and "forwarded" in v:
                    wanted.setdefault(v["forwarded"]["key"], v["forwarded"])
        if not wanted:
            return
        producers = {(t.name, t.incarnation): t for t in tasks}

        async def take(pull: dict[str, Any]) -> Any:
            producer = producers.get((pull["task"], pull["incarnation"]))
            if pull["key"] in delivered:  # it came with the producer's run_step reply
                producer, r = delivered[pull["key"]]
                return _fetched(pull, r, producer.address)
            if producer is None:
                raise errors.UnavailableError(
                    None, None, f"Task {pull['task']}, which produced the fetch '{pull['fetch']}', is not one of "
                    "this step's tasks any more (it restarted).")
            r = await self._watched_call(producer, self.call(producer, "recv_tensor", {
                "step_id": step_id, "key": pull["key"], "timeout_ms": timeout_ms}, None))
            return _fetched(pull, r, producer.address)

        got = dict(zip(wanted, await asyncio.gather(*(take(p) for p in wanted.values()))))
        for r in replies:
            r["values"] = [got[v["forwarded"]["key"]] if type(v) is dict and "forwarded" in v else v
                           for v in r["values"]]

    async def _watched_call(self, task: RemoteTask, call: Any) -> Any:
        """`call`'s result, asking `task` for its status every HEARTBEAT_S while it
        runs: a transfer may take long, a task that stopped answering may not."""
        fut = asyncio.ensure_future(call)
        while True:
            done, _ = await asyncio.wait({fut}, timeout=HEARTBEAT_S)
            if done:
                return fut.result()
            try:
                await self.call(task, "status", {}, HEARTBEAT_TIMEOUT_S)
            except BaseException:
                fut.cancel()
                raise

    async def _stream_events(self, running: list[RemoteTask], step_id: int, listener: Any) -> None:
        """Replay to `listener` the events the still-running tasks recorded so far
        (a task that does not answer is left to the heartbeat)."""
        got = await asyncio.gather(*(self.call(t, "step_events", {"step_id": step_id}, HEARTBEAT_TIMEOUT_S)
                                     for t in running), return_exceptions=True)
        for t, r in zip(running, got):
            if isinstance(r, dict) and r.get("rows"):
                replay(r["rows"], step_id, t.clock_offset_us, listener)

    async def _commit(self, task: RemoteTask, step_ids: list[int]) -> None:
        for step_id in step_ids:
            try:
                await self.call(task, "commit_step", {"step_id": step_id}, CONTROL_TIMEOUT_S)
            except errors.OpError:  # the task went away: its undo logs went with it
                return

    async def _abort(self, tasks: list[RemoteTask], step_id: int, reason: str,
                     timeout_s: float = CONTROL_TIMEOUT_S) -> None:
        await asyncio.gather(*(self.call(t, "abort_step", {"step_id": step_id, "reason": reason}, timeout_s)
                               for t in tasks if not t.lost), return_exceptions=True)


def _deliveries(tasks: list[RemoteTask], handle: str) -> dict[str, list[str]]:
    """Per producing task's name, the keys of this step's fetches that another task
    only passes on (flowlab.distributed.forwarding): its run_step reply delivers them,
    which saves the client a recv_tensor."""
    names = {(t.name, t.incarnation) for t in tasks}
    out: dict[str, list[str]] = {}
    for t in tasks:
        for pull in t.forwarded.get(handle, ()):
            if (pull["task"], pull["incarnation"]) in names:
                out.setdefault(pull["task"], []).append(pull["key"])
    return out


def _pushes(tasks: list[RemoteTask], handle: str) -> dict[str, dict[str, list[Any]]]:
    """Per task's name, what its run_step adds so that each transfer between two of
    `tasks` in the root frame is one message: the producer's `push` (each key with
    its receiver) and the receiver's `pushed` (the keys it then does not pull).  A key
    whose producer is not one of `tasks` (or another incarnation of it) is pulled, as
    are keys inside loops and fetches a task only passes on."""
    by_name = {t.name: t for t in tasks}
    out: dict[str, dict[str, list[Any]]] = {}
    for t in tasks:
        for p in t.pulls.get(handle, ()):
            producer = by_name.get(p["task"])
            if producer is None or producer.incarnation != p["incarnation"]:
                continue
            out.setdefault(producer.name, {}).setdefault("push", []).append(
                {"key": p["key"], "task": t.name, "incarnation": t.incarnation, "address": t.address})
            out.setdefault(t.name, {}).setdefault("pushed", []).append(p["key"])
    return out


def _fetched(pull: dict[str, Any], reply: dict[str, Any], address: str) -> Any:
    """A forwarded fetch's value from its producer's recv_tensor reply, as the task
    that passed it on would have returned it."""
    if reply["is_dead"]:
        raise errors.InvalidArgumentError(
            None, None, f"Fetched tensor '{pull['fetch']}' is dead: it was produced on a branch that was not taken.")
    return fetch_value(owned(values_from_wire([reply["value"]]), address)[0])


class RemoteTask:
    """One task of a cluster, reached through `connection` (see the module docstring)."""

    in_process = False

    def __init__(self, connection: Connection, address: str, status: dict[str, Any], clock_offset_us: float = 0.0
                 ) -> None:
        self.connection = connection
        self.address = address
        self.name: str = status["task"]
        self.incarnation: int = status["incarnation"]
        self.lost = False  # a call found it dead or restarted
        self.clock_offset_us = clock_offset_us  # its clock minus the client's (events.clock_offset_us)
        self.uncommitted: list[int] = []  # succeeded steps whose undo logs the task still keeps
        self.devices: list[Device] = []
        for m in status["devices"]:
            a = DeviceAttributes.from_message(m)
            d = Device(DeviceSpec.from_string(a.name), incarnation=a.incarnation)
            d.memory_limit_bytes = a.memory_limit_bytes
            self.devices.append(d)
        self._device_of = {d.name: d for d in self.devices}
        self._messages: dict[str, dict[str, Any]] = {}
        # Per handle, the fetches this task only passes on: their producers deliver them.
        self.forwarded: dict[str, list[dict[str, Any]]] = {}
        # Per handle whose part here is nothing but such fetches: its run_step values.
        self.passive: dict[str, list[Any]] = {}
        # Per handle, the root-frame keys this task takes from other tasks itself
        # ({"key", "task", "incarnation"}): their producers push them (`_pushes`).
        self.pulls: dict[str, list[dict[str, Any]]] = {}
        self._views: dict[str, Registered] = {}
        self._combined: dict[tuple[str, tuple[str, ...]], PartitionedPlan] = {}

    def __repr__(self) -> str:
        return f"<RemoteTask {self.name} at {self.address}>"

    # --- the interface, as the master and the Session call it -----------------------
    def register_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        library = library_for(message["units"])  # the bodies of the functions it calls
        sent = {**message, "library": library} if library else message
        reply = self.connection.call_sync(self, "register_partitions", sent, REGISTER_TIMEOUT_S)
        self._messages[message["handle"]] = message
        self.forwarded[message["handle"]] = list(reply.pop("forwarded", None) or [])
        passive = reply.pop("passive", None)
        if passive is not None:
            self.passive[message["handle"]] = list(passive)
        self.pulls[message["handle"]] = list(reply.pop("pulls", None) or [])
        return reply

    def run(self, handle: str, step_id: int, feeds: list[Any], timeout_ms: int = 0, listener: Any = None,
            traced: bool = False) -> list[Any]:
        return self.connection.run_tasks([self], handle, step_id, feeds, timeout_ms, listener, traced)[0]

    def run_together(self, tasks: list[RemoteTask], handle: str, step_id: int, feeds: list[Any],
                     timeout_ms: int, listener: Any, traced: bool) -> list[list[Any]]:
        """One step on `tasks` (all of this task's connection) at once."""
        return self.connection.run_tasks(tasks, handle, step_id, feeds, timeout_ms, listener, traced)

    def abort_step(self, message: dict[str, Any]) -> dict[str, Any]:
        return self.connection.call_sync(self, "abort_step", message, CONTROL_TIMEOUT_S)

    def commit_step(self, message: dict[str, Any]) -> dict[str, Any]:
        return self.connection.call_sync(self, "commit_step", message, CONTROL_TIMEOUT_S)

    def deregister_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        self.flush_commits()
        self._messages.pop(message["handle"], None)
        self.forwarded.pop(message["handle"], None)
        self.passive.pop(message["handle"], None)
        self.pulls.pop(message["handle"], None)
        self._views.pop(message["handle"], None)
        for key in [k for k in self._combined if k[0] == message["handle"]]:
            del self._combined[key]
        if self.lost:
            return {"deregistered": False}
        try:
            return self.connection.call_sync(self, "deregister_partitions", message, CONTROL_TIMEOUT_S)
        except errors.UnavailableError:  # the task is gone, and its registrations with it
            return {"deregistered": False}

    def status(self, message: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.connection.call_sync(self, "status", {}, CONTROL_TIMEOUT_S)

    def reset(self, containers: list[str] | None = None) -> dict[str, Any]:
        return self.connection.call_sync(self, "reset", {"containers": containers}, CONTROL_TIMEOUT_S)

    def passive_reply(self, handle: str) -> dict[str, Any] | None:
        """The run_step reply of an unwatched step of `handle` when this task only
        passes fetches on (flowlab.distributed.forwarding), so it need not be called;
        None when it must run: it does more, owes commits, or was found lost (a call
        then fails fast with its error)."""
        values = self.passive.get(handle)
        if values is None or self.uncommitted or self.lost:
            return None
        return {"values": list(values), "held": False}

    def with_commits(self, message: dict[str, Any]) -> dict[str, Any]:
        """`message` carrying the commits waiting for this task (taken)."""
        if not self.uncommitted:
            return message
        return {**message, "commit": self.take_commits()}

    def take_commits(self) -> list[int]:
        out, self.uncommitted = self.uncommitted, []
        return out

    def flush_commits(self) -> None:
        """Commit what waits now (a session that stops using the task)."""
        if self.uncommitted and not self.lost:
            self.connection.sync(self.connection._commit(self, self.take_commits()))

    # --- for the client's views (pictures, RunMetadata, make_callable) ----------------
    def runner(self, handle: str) -> None:
        return None  # no in-process fast path: every step is a message

    def compiled(self, handle: str) -> Registered:
        """The partitions this task was sent, compiled here for inspection only (on
        device descriptions; nothing of it runs)."""
        reg = self._views.get(handle)
        if reg is None:
            m = self._messages[handle]
            debug = m.get("debug_info") or {}
            units = [import_unit(u, self._device_of, debug) for u in m["units"]]
            plan = compile_units(units, int(m["graph_version"]), int(m["num_fetches"]), list(m.get("pairs") or []),
                                 m.get("sequence"), with_peers=True)
            reg = self._views[handle] = Registered(plan, int(m["num_fetches"]), None, None, fast=False)
        return reg

    def view_of(self, tasks: list[RemoteTask], handle: str) -> PartitionedPlan:
        """The partitions of a step over `tasks`, compiled here as one plan for the
        client's views (RunMetadata, the profiler, pictures): every task's units and
        every pair between them.  Nothing of it runs."""
        key = (handle, tuple(t.name for t in tasks))
        view = self._combined.get(key)
        if view is None:
            parts, pairs = [], []
            for t in tasks:
                plan = t.compiled(handle).plan
                if isinstance(plan, PartitionedPlan):
                    parts.extend(plan.partitions)
                    pairs.extend(plan.pairs)
                else:
                    unit = plan.unit  # type: ignore[attr-defined]
                    parts.append(CompiledPartition(unit.device, plan, unit.feed_index, unit.fetch_index, unit))
            m = self._messages[handle]
            view = self._combined[key] = PartitionedPlan(int(m["graph_version"]), parts, pairs, int(m["num_fetches"]))
        return view

    def close(self) -> None:
        """Nothing to release here: the task and its state live on the worker."""
